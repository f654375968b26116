// End to end (DESIGN.md §11, docs/operations.md "Ownership"): a real paratune-server with TLS
// and a token file naming two client principals (alice, bob), two worker principals and an
// admin, on 127.0.0.1 port 0. Clients reach only their own searches, workers only the workers
// they registered, the admin everything; SIGHUP reloads the token file without dropping
// connections. No worker runs: searches stay PROBING until cancelled.
#include <signal.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/client_credentials.h"
#include "common/test_certificates.h"
#include "common/test_file.h"
#include "gmock/gmock.h"
#include "grpcpp/create_channel.h"
#include "gtest/gtest.h"
#include "proto/autotuner_service.grpc.pb.h"
#include "proto/worker.pb.h"
#include "proto/worker_service.grpc.pb.h"
#include "server/core/test_requests.h"
#include "tests/process_harness.h"
#include "tests/test_cluster.h"

namespace paratune {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr absl::Duration kRpcTimeout = absl::Seconds(30);
constexpr absl::Duration kStartTimeout = absl::Seconds(60);

constexpr char kAliceToken[] = "e2e-alice-token-1a2b3c4d";
constexpr char kBobToken[] = "e2e-bob-token-5e6f7a8b";
constexpr char kOpsToken[] = "e2e-ops-token-9c0d1e2f";
constexpr char kPoolAToken[] = "e2e-pool-a-token-3a4b5c6d";
constexpr char kPoolBToken[] = "e2e-pool-b-token-7e8f9a0b";
constexpr char kCarolToken[] = "e2e-carol-token-0f1e2d3c";

std::string& ServerBinary() {
  static std::string* const binary = new std::string();
  return *binary;
}

std::string TokenFileText(const std::string& alice_line) {
  return absl::StrCat("# e2e ownership\n", alice_line, "\nclient bob ", kBobToken, "\nadmin ops ",
                      kOpsToken, "\nworker pool-a ", kPoolAToken, "\nworker pool-b ", kPoolBToken,
                      "\n");
}

class E2eOwnershipTest : public CertificatesTest {
 protected:
  void SetUp() override {
    CertificatesTest::SetUp();
    token_file_ =
        WriteTestFile("tokens", TokenFileText(absl::StrCat("client alice ", kAliceToken)));
    const std::string port_file = TestFilePath("ownership-port");
    std::remove(port_file.c_str());
    absl::StatusOr<std::unique_ptr<ChildProcess>> server = ChildProcess::Spawn(
        {ServerBinary(), "--address=127.0.0.1:0", absl::StrCat("--port_file=", port_file),
         "--db=:memory:", absl::StrCat("--tls_cert=", certs().server_cert),
         absl::StrCat("--tls_key=", certs().server_key),
         absl::StrCat("--token_file=", token_file_)});
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    absl::StatusOr<int> port = WaitForPortFile(port_file, kStartTimeout, *server_);
    ASSERT_TRUE(port.ok()) << port.status();
    address_ = absl::StrCat("127.0.0.1:", *port);
  }

  std::shared_ptr<grpc::Channel> Channel(const std::string& token) {
    ClientCredentialsOptions options;
    options.tls_ca = certs().ca_cert;
    options.token_file = WriteTestFile(absl::StrCat("token-", ++token_files_), token);
    absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
        LoadClientCredentials(options);
    EXPECT_TRUE(credentials.ok()) << credentials.status();
    return grpc::CreateChannel(
        address_, credentials.ok() ? *credentials : grpc::InsecureChannelCredentials());
  }

  std::unique_ptr<v1::Autotuner::Stub> Autotuner(const std::string& token) {
    return v1::Autotuner::NewStub(Channel(token));
  }

  std::unique_ptr<v1::WorkerService::Stub> Workers(const std::string& token) {
    return v1::WorkerService::NewStub(Channel(token));
  }

  static absl::StatusOr<v1::Search> Create(v1::Autotuner::Stub& stub) {
    v1::Search search;
    const grpc::Status status =
        stub.CreateSearch(ContextWithTimeout(kRpcTimeout).get(), SmallSimSearch(2), &search);
    if (!status.ok()) return absl::InternalError(status.error_message());
    return search;
  }

  static grpc::Status Get(v1::Autotuner::Stub& stub, const std::string& name, v1::Search* search) {
    v1::GetSearchRequest request;
    request.set_name(name);
    return stub.GetSearch(ContextWithTimeout(kRpcTimeout).get(), request, search);
  }

  static grpc::Status Cancel(v1::Autotuner::Stub& stub, const std::string& name) {
    v1::CancelSearchRequest request;
    request.set_name(name);
    v1::Search search;
    return stub.CancelSearch(ContextWithTimeout(kRpcTimeout).get(), request, &search);
  }

  static std::vector<std::string> Listed(v1::Autotuner::Stub& stub) {
    v1::ListSearchesResponse response;
    const grpc::Status status = stub.ListSearches(ContextWithTimeout(kRpcTimeout).get(),
                                                  v1::ListSearchesRequest(), &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    std::vector<std::string> names;
    for (const v1::Search& search : response.searches()) names.push_back(search.name());
    return names;
  }

  static grpc::Status Events(v1::Autotuner::Stub& stub, const std::string& name,
                             std::vector<std::string>* texts) {
    v1::ListSearchEventsRequest request;
    request.set_name(name);
    v1::ListSearchEventsResponse response;
    const grpc::Status status =
        stub.ListSearchEvents(ContextWithTimeout(kRpcTimeout).get(), request, &response);
    for (const v1::SearchEvent& event : response.events()) texts->push_back(event.text());
    return status;
  }

  // The first message of a WatchSearch stream, or its status when it ends without one.
  static grpc::Status FirstWatched(v1::Autotuner::Stub& stub, const std::string& name) {
    v1::WatchSearchRequest request;
    request.set_name(name);
    std::unique_ptr<grpc::ClientContext> context = ContextWithTimeout(kRpcTimeout);
    auto reader = stub.WatchSearch(context.get(), request);
    v1::WatchSearchResponse response;
    if (reader->Read(&response)) {
      context->TryCancel();
      reader->Finish().IgnoreError();
      return grpc::Status::OK;
    }
    return reader->Finish();
  }

  std::string token_file_;
  std::unique_ptr<ChildProcess> server_;
  std::string address_;
  int token_files_ = 0;
};

TEST_F(E2eOwnershipTest, AClientCannotSeeListWatchOrCancelAnothersSearchButAnAdminCan) {
  auto alice = Autotuner(kAliceToken);
  auto bob = Autotuner(kBobToken);
  auto ops = Autotuner(kOpsToken);
  absl::StatusOr<v1::Search> bobs = Create(*bob);
  ASSERT_TRUE(bobs.ok()) << bobs.status();
  EXPECT_EQ(bobs->creator(), "bob");
  absl::StatusOr<v1::Search> alices = Create(*alice);
  ASSERT_TRUE(alices.ok()) << alices.status();
  EXPECT_EQ(alices->creator(), "alice");

  // Alice is told what she would be told of a search that does not exist.
  v1::Search seen;
  const grpc::Status get = Get(*alice, bobs->name(), &seen);
  EXPECT_EQ(get.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(get.error_message(), absl::StrCat("search ", bobs->name(), " not found"));
  EXPECT_EQ(Get(*alice, "searches/999999", &seen).error_message(),
            "search searches/999999 not found");
  EXPECT_THAT(Listed(*alice), Not(Contains(bobs->name())));
  EXPECT_THAT(Listed(*alice), Contains(alices->name()));
  EXPECT_EQ(FirstWatched(*alice, bobs->name()).error_code(), grpc::StatusCode::NOT_FOUND);
  std::vector<std::string> events;
  EXPECT_EQ(Events(*alice, bobs->name(), &events).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(Cancel(*alice, bobs->name()).error_code(), grpc::StatusCode::NOT_FOUND);

  // Bob sees his own, and not Alice's.
  ASSERT_TRUE(Get(*bob, bobs->name(), &seen).ok());
  EXPECT_EQ(seen.state(), v1::PROBING);
  EXPECT_THAT(Listed(*bob), Not(Contains(alices->name())));

  // The admin sees and cancels everyone's.
  ASSERT_TRUE(Get(*ops, bobs->name(), &seen).ok());
  EXPECT_EQ(seen.creator(), "bob");
  EXPECT_THAT(Listed(*ops), Contains(bobs->name()));
  EXPECT_THAT(Listed(*ops), Contains(alices->name()));
  EXPECT_TRUE(FirstWatched(*ops, bobs->name()).ok());
  ASSERT_TRUE(Cancel(*ops, bobs->name()).ok());
  ASSERT_TRUE(Cancel(*alice, alices->name()).ok());

  events.clear();
  ASSERT_TRUE(Events(*ops, bobs->name(), &events).ok());
  EXPECT_THAT(events, Contains(HasSubstr("search created by bob")));
  EXPECT_THAT(events, Contains(HasSubstr("search cancelled by ops")));
  ASSERT_TRUE(Get(*bob, bobs->name(), &seen).ok());
  EXPECT_EQ(seen.state(), v1::CANCELLED);
  EXPECT_THAT(seen.stop_reason(), HasSubstr("cancelled by ops"));
  events.clear();
  ASSERT_TRUE(Events(*alice, alices->name(), &events).ok());
  EXPECT_THAT(events, Contains(HasSubstr("search cancelled by alice")));
}

TEST_F(E2eOwnershipTest, AWorkerTokenActsOnlyAsTheWorkersItRegistered) {
  auto pool_a = Workers(kPoolAToken);
  auto pool_b = Workers(kPoolBToken);
  v1::RegisterWorkerRequest registration;
  registration.set_hostname("node-a");
  v1::Gpu& gpu = *registration.add_gpus();
  gpu.set_name("simulated H100-80GB");
  gpu.set_memory_bytes(85'520'809'984);
  registration.add_backends("sim");
  v1::RegisterWorkerResponse registered;
  ASSERT_TRUE(
      pool_a->RegisterWorker(ContextWithTimeout(kRpcTimeout).get(), registration, &registered)
          .ok());

  v1::HeartbeatRequest heartbeat;
  heartbeat.set_worker(registered.name());
  v1::HeartbeatResponse beat;
  EXPECT_TRUE(pool_a->Heartbeat(ContextWithTimeout(kRpcTimeout).get(), heartbeat, &beat).ok());
  const grpc::Status foreign =
      pool_b->Heartbeat(ContextWithTimeout(kRpcTimeout).get(), heartbeat, &beat);
  EXPECT_EQ(foreign.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(foreign.error_message(), HasSubstr("register again"));

  v1::AcquireProbeRequest acquire;
  acquire.set_worker(registered.name());
  acquire.set_wait_seconds(0.01);
  v1::AcquireProbeResponse acquired;
  EXPECT_EQ(
      pool_b->AcquireProbe(ContextWithTimeout(kRpcTimeout).get(), acquire, &acquired).error_code(),
      grpc::StatusCode::NOT_FOUND);
  v1::ReportProbeRequest report;
  report.set_worker(registered.name());
  v1::ReportProbeResponse reported;
  EXPECT_EQ(
      pool_b->ReportProbe(ContextWithTimeout(kRpcTimeout).get(), report, &reported).error_code(),
      grpc::StatusCode::NOT_FOUND);
  v1::DeregisterWorkerRequest leave;
  leave.set_worker(registered.name());
  v1::DeregisterWorkerResponse left;
  EXPECT_EQ(
      pool_b->DeregisterWorker(ContextWithTimeout(kRpcTimeout).get(), leave, &left).error_code(),
      grpc::StatusCode::NOT_FOUND);
  // An admin may act as any worker.
  EXPECT_TRUE(
      Workers(kOpsToken)->Heartbeat(ContextWithTimeout(kRpcTimeout).get(), heartbeat, &beat).ok());

  v1::ListWorkersResponse workers;
  ASSERT_TRUE(
      Autotuner(kOpsToken)
          ->ListWorkers(ContextWithTimeout(kRpcTimeout).get(), v1::ListWorkersRequest(), &workers)
          .ok());
  ASSERT_EQ(workers.workers_size(), 1);
  EXPECT_EQ(workers.workers(0).registered_by(), "pool-a");
  EXPECT_TRUE(pool_a->DeregisterWorker(ContextWithTimeout(kRpcTimeout).get(), leave, &left).ok());
}

TEST_F(E2eOwnershipTest, SighupReloadsTheTokenFileWithoutDroppingConnections) {
  auto alice = Autotuner(kAliceToken);
  auto ops = Autotuner(kOpsToken);
  absl::StatusOr<v1::Search> search = Create(*alice);
  ASSERT_TRUE(search.ok()) << search.status();
  // A stream admitted before the reload goes on after it.
  v1::WatchSearchRequest watch_request;
  watch_request.set_name(search->name());
  std::unique_ptr<grpc::ClientContext> watch_context = ContextWithTimeout(kRpcTimeout);
  auto watch = alice->WatchSearch(watch_context.get(), watch_request);
  v1::WatchSearchResponse watched;
  ASSERT_TRUE(watch->Read(&watched));

  // Alice's token is replaced by a new one, carol's.
  WriteTestFile("tokens", TokenFileText(absl::StrCat("client alice ", kCarolToken)));
  ASSERT_EQ(kill(server_->pid(), SIGHUP), 0);
  auto carol = Autotuner(kCarolToken);
  v1::ListWorkersResponse workers;
  grpc::Status status;
  // The reload happens on the server's signal thread: poll until the new token is accepted.
  for (const absl::Time deadline = absl::Now() + kRpcTimeout; absl::Now() < deadline;
       absl::SleepFor(absl::Milliseconds(20))) {
    status = carol->ListWorkers(ContextWithTimeout(kRpcTimeout).get(), v1::ListWorkersRequest(),
                                &workers);
    if (status.ok()) break;
    ASSERT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED) << status.error_message();
  }
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(
      alice->ListWorkers(ContextWithTimeout(kRpcTimeout).get(), v1::ListWorkersRequest(), &workers)
          .error_code(),
      grpc::StatusCode::UNAUTHENTICATED);
  // The new token names the same principal: alice's search is still hers.
  v1::Search seen;
  ASSERT_TRUE(Get(*carol, search->name(), &seen).ok());
  EXPECT_EQ(seen.creator(), "alice");

  ASSERT_TRUE(Cancel(*ops, search->name()).ok());
  bool saw_cancel = false;
  while (watch->Read(&watched)) saw_cancel |= watched.search().state() == v1::CANCELLED;
  EXPECT_TRUE(saw_cancel);
  const grpc::Status finished = watch->Finish();
  EXPECT_TRUE(finished.ok()) << finished.error_message();
}

}  // namespace
}  // namespace paratune

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (argc < 2) {
    std::fprintf(stderr, "usage: e2e_ownership_test PARATUNE_SERVER\n");
    return 2;
  }
  paratune::ServerBinary() = argv[1];
  return RUN_ALL_TESTS();
}
