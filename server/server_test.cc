#include "server/server.h"

#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/client_credentials.h"
#include "common/grpc_client.h"
#include "common/grpc_introspection.h"
#include "common/test_certificates.h"
#include "common/test_file.h"
#include "gmock/gmock.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "proto/autotuner_service.grpc.pb.h"
#include "proto/worker.pb.h"
#include "proto/worker_service.grpc.pb.h"
#include "server/core/test_requests.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;

constexpr absl::Duration kTimeout = absl::Seconds(30);

std::unique_ptr<grpc::ClientContext> Context() { return ContextWithTimeout(kTimeout); }

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ParatuneServer::Options options;
    options.address = "127.0.0.1:0";
    absl::StatusOr<std::unique_ptr<ParatuneServer>> server =
        ParatuneServer::Start(std::move(options));
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    ASSERT_GT(server_->port(), 0);
    channel_ = grpc::CreateChannel(absl::StrCat("127.0.0.1:", server_->port()),
                                   grpc::InsecureChannelCredentials());
    autotuner_ = v1::Autotuner::NewStub(channel_);
    workers_ = v1::WorkerService::NewStub(channel_);
  }

  void TearDown() override {
    autotuner_.reset();
    workers_.reset();
    channel_.reset();
    if (server_ != nullptr) server_->Shutdown(absl::Seconds(1));
  }

  std::string RegisterWorker() {
    v1::RegisterWorkerRequest request;
    request.set_hostname("test");
    for (int i = 0; i < 8; ++i) {
      v1::Gpu& gpu = *request.add_gpus();
      gpu.set_index(i);
      gpu.set_name("simulated H100-80GB");
      gpu.set_memory_bytes(85'520'809'984);
    }
    request.add_backends("sim");
    v1::RegisterWorkerResponse response;
    EXPECT_TRUE(workers_->RegisterWorker(Context().get(), request, &response).ok());
    EXPECT_EQ(response.heartbeat_interval_seconds(), 2);
    return response.name();
  }

  std::unique_ptr<ParatuneServer> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Autotuner::Stub> autotuner_;
  std::unique_ptr<v1::WorkerService::Stub> workers_;
};

TEST_F(ServerTest, ServesHealthChecksAndReflection) {
  absl::StatusOr<int> health = CheckHealth(channel_);
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_EQ(*health, 1);  // SERVING
  absl::StatusOr<std::string> services = ListServicesByReflection(channel_);
  ASSERT_TRUE(services.ok()) << services.status();
  EXPECT_THAT(*services, HasSubstr("paratune.v1.Autotuner"));
  EXPECT_THAT(*services, HasSubstr("paratune.v1.WorkerService"));
}

TEST_F(ServerTest, RunsASearchThroughBothServices) {
  const std::string worker = RegisterWorker();
  v1::Search search;
  ASSERT_TRUE(autotuner_->CreateSearch(Context().get(), SmallSimSearch(1), &search).ok());
  ASSERT_EQ(search.state(), v1::PROBING);

  v1::AcquireProbeRequest acquire;
  acquire.set_worker(worker);
  acquire.set_wait_seconds(5);
  v1::AcquireProbeResponse acquired;
  ASSERT_TRUE(workers_->AcquireProbe(Context().get(), acquire, &acquired).ok());
  ASSERT_TRUE(acquired.has_assignment());
  EXPECT_EQ(acquired.assignment().name(), search.name() + "/candidates/0/probes/1");

  v1::ReportProbeRequest report;
  report.set_worker(worker);
  report.set_probe(acquired.assignment().name());
  v1::ProbeResult& result = *report.mutable_result();
  result.set_outcome(v1::PROBE_OK);
  result.set_backend("sim");
  result.add_step_times_seconds(2.0);
  result.set_mean_step_time_seconds(2.0);
  result.set_model_tflops_per_gpu(300);
  result.set_simulated(true);
  v1::ReportProbeResponse reported;
  ASSERT_TRUE(workers_->ReportProbe(Context().get(), report, &reported).ok());
  // The same report again, as after a lost reply: OK again. A different one is refused.
  EXPECT_TRUE(workers_->ReportProbe(Context().get(), report, &reported).ok());
  report.mutable_result()->set_model_tflops_per_gpu(301);
  EXPECT_EQ(workers_->ReportProbe(Context().get(), report, &reported).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);

  // Watching an ended search sends it once and finishes OK.
  v1::WatchSearchRequest watch;
  watch.set_name(search.name());
  auto context = Context();
  std::unique_ptr<grpc::ClientReader<v1::WatchSearchResponse>> reader =
      autotuner_->WatchSearch(context.get(), watch);
  v1::WatchSearchResponse event;
  int events = 0;
  while (reader->Read(&event)) {
    ++events;
    EXPECT_EQ(event.search().state(), v1::SUCCEEDED);
  }
  EXPECT_TRUE(reader->Finish().ok());
  EXPECT_EQ(events, 1);
}

TEST_F(ServerTest, ParkedAcquireIsAnsweredWhenAProbeIsQueued) {
  const std::string worker = RegisterWorker();
  v1::AcquireProbeRequest acquire;
  acquire.set_worker(worker);
  acquire.set_wait_seconds(30);
  v1::AcquireProbeResponse acquired;
  grpc::Status status;
  std::thread poll([&] { status = workers_->AcquireProbe(Context().get(), acquire, &acquired); });
  v1::Search search;
  ASSERT_TRUE(autotuner_->CreateSearch(Context().get(), SmallSimSearch(1), &search).ok());
  poll.join();
  ASSERT_TRUE(status.ok()) << status.error_message();
  // Whether the poll parked before the search existed or not, it gets the probe.
  ASSERT_TRUE(acquired.has_assignment());
  EXPECT_EQ(acquired.assignment().name(), search.name() + "/candidates/0/probes/1");
}

TEST_F(ServerTest, AcquireWithNothingQueuedReturnsEmptyAtTheWait) {
  v1::AcquireProbeRequest acquire;
  acquire.set_worker(RegisterWorker());
  acquire.set_wait_seconds(0.05);
  v1::AcquireProbeResponse acquired;
  ASSERT_TRUE(workers_->AcquireProbe(Context().get(), acquire, &acquired).ok());
  EXPECT_FALSE(acquired.has_assignment());

  acquire.set_wait_seconds(90);
  const grpc::Status status = workers_->AcquireProbe(Context().get(), acquire, &acquired);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("wait_seconds (90)"));
}

TEST_F(ServerTest, WatchOfUnknownSearchIsNotFound) {
  v1::WatchSearchRequest watch;
  watch.set_name("searches/77");
  auto context = Context();
  std::unique_ptr<grpc::ClientReader<v1::WatchSearchResponse>> reader =
      autotuner_->WatchSearch(context.get(), watch);
  v1::WatchSearchResponse event;
  EXPECT_FALSE(reader->Read(&event));
  const grpc::Status status = reader->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(status.error_message(), HasSubstr("searches/77"));
}

TEST_F(ServerTest, ShutdownEndsOpenWatchStreams) {
  v1::Search search;
  ASSERT_TRUE(autotuner_->CreateSearch(Context().get(), SmallSimSearch(1), &search).ok());
  v1::WatchSearchRequest watch;
  watch.set_name(search.name());
  auto context = Context();
  std::unique_ptr<grpc::ClientReader<v1::WatchSearchResponse>> reader =
      autotuner_->WatchSearch(context.get(), watch);
  v1::WatchSearchResponse event;
  ASSERT_TRUE(reader->Read(&event));
  EXPECT_EQ(event.events_size(), 0);
  EXPECT_EQ(event.search().name(), search.name());
  server_->Shutdown(absl::Seconds(1));
  while (reader->Read(&event)) {
  }
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::UNAVAILABLE);
}

TEST_F(ServerTest, ASecondServerOnTheSamePortFailsInsteadOfSharingIt) {
  ParatuneServer::Options options;
  options.address = absl::StrCat("127.0.0.1:", server_->port());
  absl::StatusOr<std::unique_ptr<ParatuneServer>> second =
      ParatuneServer::Start(std::move(options));
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(second.status().message(), ::testing::HasSubstr("the port is taken"));
}

TEST(ServerStartTest, RefusesRemoteAddressesWithoutPermission) {
  ParatuneServer::Options options;
  options.address = "0.0.0.0:0";
  const absl::Status status = ParatuneServer::Start(std::move(options)).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("--insecure_allow_remote"));
}

TEST(ServerStartTest, RefusesLimitsOutOfRange) {
  ParatuneServer::Options options;
  options.address = "127.0.0.1:0";
  options.limits.max_request_bytes = 512 << 20;
  const absl::Status status = ParatuneServer::Start(std::move(options)).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("--max_request_bytes"));
}

TEST(ServerLimitsTest, RequestSizeAndEnumerationCapsNameTheirFlags) {
  ParatuneServer::Options options;
  options.address = "127.0.0.1:0";
  options.limits.max_request_bytes = 1024;
  options.limits.max_enumerated_candidates = 10;
  absl::StatusOr<std::unique_ptr<ParatuneServer>> server =
      ParatuneServer::Start(std::move(options));
  ASSERT_TRUE(server.ok()) << server.status();
  std::unique_ptr<v1::Autotuner::Stub> autotuner = v1::Autotuner::NewStub(grpc::CreateChannel(
      absl::StrCat("127.0.0.1:", (*server)->port()), grpc::InsecureChannelCredentials()));

  v1::CreateSearchRequest large = SmallSimSearch(1);
  large.set_display_name(std::string(2000, 'x'));
  v1::Search search;
  grpc::Status status = autotuner->CreateSearch(Context().get(), large, &search);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("--max_request_bytes=1024"));

  v1::PlanRequest plan;
  *plan.mutable_spec() = SmallSimSearch(1).spec();
  v1::PlanResponse response;
  status = autotuner->Plan(Context().get(), plan, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("--max_enumerated_candidates=10"));
  (*server)->Shutdown(absl::Seconds(1));
}

// A server with TLS, client certificates and tokens, and what a client needs to reach it.
class SecuredServerStartTest : public CertificatesTest {
 protected:
  static ServerSecurityOptions Security() {
    ServerSecurityOptions security;
    security.tls_cert = certs().server_cert;
    security.tls_key = certs().server_key;
    security.tls_client_ca = certs().ca_cert;
    security.token_file = WriteTestFile(
        "tokens", "client alice client-token-0123456789\nworker pool worker-token-0123456789\n");
    return security;
  }

  static std::unique_ptr<v1::Autotuner::Stub> Autotuner(int port, const std::string& token) {
    ClientCredentialsOptions options;
    options.tls_ca = certs().ca_cert;
    options.tls_cert = certs().client_cert;
    options.tls_key = certs().client_key;
    options.token_file = WriteTestFile("token", token);
    return v1::Autotuner::NewStub(grpc::CreateChannel(absl::StrCat("127.0.0.1:", port),
                                                      LoadClientCredentials(options).value()));
  }
};

TEST_F(SecuredServerStartTest, ChecksTheTokenOfEveryCall) {
  ParatuneServer::Options options;
  options.address = "127.0.0.1:0";
  options.security = Security();
  absl::StatusOr<std::unique_ptr<ParatuneServer>> server =
      ParatuneServer::Start(std::move(options));
  ASSERT_TRUE(server.ok()) << server.status();

  v1::ListWorkersResponse workers;
  EXPECT_TRUE(Autotuner((*server)->port(), "client-token-0123456789")
                  ->ListWorkers(Context().get(), v1::ListWorkersRequest(), &workers)
                  .ok());
  EXPECT_EQ(Autotuner((*server)->port(), "worker-token-0123456789")
                ->ListWorkers(Context().get(), v1::ListWorkersRequest(), &workers)
                .error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
}

TEST_F(SecuredServerStartTest, ASlurmLauncherNeedsTheWorkersCredentialFlags) {
  ParatuneServer::Options options;
  options.address = "127.0.0.1:0";
  options.security = Security();
  options.slurm_launcher.emplace();
  options.slurm_launcher->job.worker_args = {"--sim_gpus=8", "--tls_ca=/shared/ca.crt"};
  const absl::Status status = ParatuneServer::Start(std::move(options)).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("set no --tls_cert"));
}

TEST_F(SecuredServerStartTest, ListensBeyondLoopbackWithTlsAndTokens) {
  ParatuneServer::Options options;
  options.address = "0.0.0.0:0";
  options.security = Security();
  absl::StatusOr<std::unique_ptr<ParatuneServer>> server =
      ParatuneServer::Start(std::move(options));
  EXPECT_TRUE(server.ok()) << server.status();
}

TEST_F(SecuredServerStartTest, TlsWithoutTokensStaysOnLoopback) {
  ParatuneServer::Options options;
  options.address = "0.0.0.0:0";
  options.security = Security();
  options.security.token_file.clear();
  const absl::Status status = ParatuneServer::Start(std::move(options)).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("needs TLS and bearer tokens"));
}

TEST_F(SecuredServerStartTest, RefusesBadSecurityFiles) {
  ParatuneServer::Options options;
  options.address = "127.0.0.1:0";
  options.security = Security();
  options.security.token_file =
      WriteTestFile("bad-tokens", "operator alice some-token-0123456789\n");
  const absl::Status status = ParatuneServer::Start(std::move(options)).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("line 1: the first field is not a role"));
}

TEST(ServerStartTest, RefusesABadHeartbeatInterval) {
  ParatuneServer::Options options;
  options.address = "127.0.0.1:0";
  options.heartbeat_interval = absl::ZeroDuration();
  EXPECT_EQ(ParatuneServer::Start(std::move(options)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace paratune
