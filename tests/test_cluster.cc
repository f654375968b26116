#include "tests/test_cluster.h"

#include <cstdio>
#include <cstdlib>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/grpc_client.h"
#include "common/grpc_status.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"

namespace paratune {
namespace {

constexpr absl::Duration kStartTimeout = absl::Seconds(30);
constexpr absl::Duration kRpcTimeout = absl::Seconds(10);

std::string& ServerBinary() {
  static std::string* const path = new std::string();
  return *path;
}

std::string& WorkerBinary() {
  static std::string* const path = new std::string();
  return *path;
}

std::string TempDir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir != nullptr ? dir : "/tmp";
}

}  // namespace

bool SetTestBinaries(int argc, char** argv) {
  if (argc < 3) return false;
  ServerBinary() = argv[1];
  WorkerBinary() = argv[2];
  return true;
}

absl::StatusOr<std::unique_ptr<TestCluster>> TestCluster::Start(
    const std::vector<std::vector<std::string>>& worker_flags, const Options& options) {
  static int clusters = 0;
  const int cluster_number = ++clusters;
  std::unique_ptr<TestCluster> cluster(new TestCluster());
  // The metrics flags of process `name`, and where its metrics port will be written.
  auto metrics_flags = [&](const std::string& name, std::vector<std::string>& argv) {
    if (!options.serve_metrics) return std::string();
    const std::string file = absl::StrCat(TempDir(), "/", name, "-metrics-port-", cluster_number);
    argv.push_back("--metrics_address=127.0.0.1:0");
    argv.push_back(absl::StrCat("--metrics_port_file=", file));
    return file;
  };
  const std::string port_file = absl::StrCat(TempDir(), "/server-port-", cluster_number);
  std::vector<std::string> server_argv = {
      ServerBinary(), "--address=127.0.0.1:0", absl::StrCat("--port_file=", port_file),
      "--heartbeat_interval_seconds=1", absl::StrCat("--db=", options.db_path)};
  server_argv.insert(server_argv.end(), options.server_flags.begin(), options.server_flags.end());
  const std::string server_metrics_file = metrics_flags("server", server_argv);
  cluster->server_argv_ = server_argv;
  cluster->server_port_file_ = port_file;
  absl::StatusOr<std::unique_ptr<ChildProcess>> server = ChildProcess::Spawn(server_argv);
  if (!server.ok()) return server.status();
  cluster->server_ = *std::move(server);
  absl::StatusOr<int> port = WaitForPortFile(port_file, kStartTimeout, *cluster->server_);
  if (!port.ok()) return port.status();
  if (options.serve_metrics) {
    absl::StatusOr<int> metrics_port =
        WaitForPortFile(server_metrics_file, kStartTimeout, *cluster->server_);
    if (!metrics_port.ok()) return metrics_port.status();
    cluster->metrics_ports_.push_back(*metrics_port);
  }
  cluster->address_ = absl::StrCat("127.0.0.1:", *port);
  cluster->autotuner_ = v1::Autotuner::NewStub(
      grpc::CreateChannel(cluster->address_, options.client_credentials != nullptr
                                                 ? options.client_credentials
                                                 : grpc::InsecureChannelCredentials()));

  for (size_t i = 0; i < worker_flags.size(); ++i) {
    std::vector<std::string> argv = {WorkerBinary(), absl::StrCat("--server=", cluster->address_),
                                     absl::StrCat("--hostname=test-worker-", i)};
    argv.insert(argv.end(), worker_flags[i].begin(), worker_flags[i].end());
    const std::string metrics_file = metrics_flags(absl::StrCat("worker-", i), argv);
    absl::StatusOr<std::unique_ptr<ChildProcess>> worker = ChildProcess::Spawn(argv);
    if (!worker.ok()) return worker.status();
    cluster->workers_.push_back(*std::move(worker));
    if (options.serve_metrics) {
      absl::StatusOr<int> metrics_port =
          WaitForPortFile(metrics_file, kStartTimeout, *cluster->workers_.back());
      if (!metrics_port.ok()) return metrics_port.status();
      cluster->metrics_ports_.push_back(*metrics_port);
    }
  }

  // Bounded polling of the registered workers: the workers have no other way to say they
  // are ready.
  const absl::Time give_up = absl::Now() + kStartTimeout;
  while (true) {
    absl::StatusOr<std::vector<v1::Worker>> workers = cluster->ListWorkers();
    if (!workers.ok()) return workers.status();
    if (workers->size() >= worker_flags.size()) break;
    for (const auto& worker : cluster->workers_) {
      if (std::optional<int> exit = worker->Poll(); exit.has_value()) {
        return absl::UnavailableError(absl::StrCat(
            "a paratune-worker exited (", DescribeExitStatus(*exit), ") before registering"));
      }
    }
    if (absl::Now() >= give_up) {
      return absl::DeadlineExceededError(absl::StrCat(workers->size(), " of ", worker_flags.size(),
                                                      " workers registered within ",
                                                      absl::FormatDuration(kStartTimeout)));
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  return cluster;
}

TestCluster::~TestCluster() {
  // The client's connection goes first: a server shutting down waits for open connections
  // to close (up to its grace period).
  autotuner_.reset();
  for (auto& worker : workers_) worker->Terminate();
  if (server_ != nullptr) server_->Terminate();
}

void TestCluster::KillServer() { server_->Kill(); }

void TestCluster::KillWorker(size_t index) { workers_.at(index)->Kill(); }

absl::Status TestCluster::RestartServer() {
  std::vector<std::string> argv = server_argv_;
  // The workers know the server by its address: it comes back on the same port.
  argv[1] = absl::StrCat("--address=", address_);
  std::remove(server_port_file_.c_str());
  absl::StatusOr<std::unique_ptr<ChildProcess>> server = ChildProcess::Spawn(argv);
  if (!server.ok()) return server.status();
  server_ = *std::move(server);
  return WaitForPortFile(server_port_file_, kStartTimeout, *server_).status();
}

absl::StatusOr<v1::Search> TestCluster::GetSearch(const std::string& name) {
  v1::GetSearchRequest get;
  get.set_name(name);
  v1::Search search;
  const absl::Status status =
      FromGrpcStatus(autotuner_->GetSearch(ContextWithTimeout(kRpcTimeout).get(), get, &search));
  if (!status.ok()) return status;
  return search;
}

absl::StatusOr<v1::Search> TestCluster::CreateSearch(const v1::CreateSearchRequest& request) {
  v1::Search created;
  absl::Status status = FromGrpcStatus(
      autotuner_->CreateSearch(ContextWithTimeout(kRpcTimeout).get(), request, &created));
  if (!status.ok()) return status;
  return created;
}

absl::StatusOr<std::vector<v1::Worker>> TestCluster::ListWorkers() {
  v1::ListWorkersResponse response;
  absl::Status status = FromGrpcStatus(autotuner_->ListWorkers(
      ContextWithTimeout(kRpcTimeout).get(), v1::ListWorkersRequest(), &response));
  if (!status.ok()) return status;
  return std::vector<v1::Worker>(response.workers().begin(), response.workers().end());
}

absl::StatusOr<std::vector<v1::SearchEvent>> TestCluster::Events(const std::string& name) {
  std::vector<v1::SearchEvent> events;
  v1::ListSearchEventsRequest request;
  request.set_name(name);
  request.set_page_size(1000);
  while (true) {
    v1::ListSearchEventsResponse response;
    absl::Status status = FromGrpcStatus(
        autotuner_->ListSearchEvents(ContextWithTimeout(kRpcTimeout).get(), request, &response));
    if (!status.ok()) return status;
    events.insert(events.end(), response.events().begin(), response.events().end());
    if (response.next_page_token().empty()) return events;
    request.set_page_token(response.next_page_token());
  }
}

absl::StatusOr<v1::Search> TestCluster::WaitForSearch(
    const std::string& name, const std::function<bool(const v1::Search&)>& done,
    absl::Duration timeout) {
  const absl::Time give_up = absl::Now() + timeout;
  absl::Status last = absl::OkStatus();
  v1::Search seen;
  while (absl::Now() < give_up) {
    absl::StatusOr<v1::Search> search = GetSearch(name);
    if (search.ok()) {
      if (done(*search)) return search;
      seen = *std::move(search);
    } else {
      last = search.status();
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  return absl::DeadlineExceededError(absl::StrCat(
      name, " did not reach the awaited state within ", absl::FormatDuration(timeout),
      "; last seen: ", seen.ShortDebugString().substr(0, 2000), "; last error: ", last.ToString()));
}

absl::StatusOr<v1::Search> TestCluster::WaitUntilEnded(const std::string& name,
                                                       absl::Duration timeout) {
  return WaitForSearch(
      name,
      [](const v1::Search& search) {
        const v1::SearchState state = search.state();
        return state == v1::SUCCEEDED || state == v1::FAILED || state == v1::CANCELLED;
      },
      timeout);
}

absl::StatusOr<std::vector<v1::WatchSearchResponse>> TestCluster::Watch(const std::string& name,
                                                                        absl::Duration timeout) {
  std::unique_ptr<grpc::ClientContext> context = ContextWithTimeout(timeout);
  v1::WatchSearchRequest request;
  request.set_name(name);
  std::unique_ptr<grpc::ClientReader<v1::WatchSearchResponse>> reader =
      autotuner_->WatchSearch(context.get(), request);
  std::vector<v1::WatchSearchResponse> responses;
  v1::WatchSearchResponse response;
  while (reader->Read(&response)) responses.push_back(response);
  const absl::Status status = FromGrpcStatus(reader->Finish());
  if (!status.ok()) return status;
  return responses;
}

absl::StatusOr<v1::Search> TestCluster::RunSearch(const v1::CreateSearchRequest& request,
                                                  absl::Duration timeout,
                                                  std::vector<v1::WatchSearchResponse>* events) {
  absl::StatusOr<v1::Search> creation = CreateSearch(request);
  if (!creation.ok()) return creation.status();
  const v1::Search& created = *creation;
  if (created.state() != v1::PROBING) {
    return absl::FailedPreconditionError(absl::StrCat(created.name(), " is ",
                                                      v1::SearchState_Name(created.state()),
                                                      ", not PROBING: ", created.stop_reason()));
  }
  absl::StatusOr<std::vector<v1::WatchSearchResponse>> watched = Watch(created.name(), timeout);
  if (!watched.ok()) return watched.status();
  if (events != nullptr) *events = *std::move(watched);
  return GetSearch(created.name());
}

}  // namespace paratune
