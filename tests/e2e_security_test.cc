// End to end (DESIGN.md §11): a real paratune-server with TLS, mutual TLS and bearer tokens
// on 127.0.0.1, a real paratune-worker with its client certificate and worker token, and the
// paratune CLI. The certificates are made by the openssl command at test time.
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/client_credentials.h"
#include "common/grpc_introspection.h"
#include "common/small_file.h"
#include "common/test_certificates.h"
#include "common/test_file.h"
#include "gmock/gmock.h"
#include "grpcpp/create_channel.h"
#include "gtest/gtest.h"
#include "proto/autotuner_service.grpc.pb.h"
#include "proto/worker.pb.h"
#include "proto/worker_service.grpc.pb.h"
#include "tests/http_client.h"
#include "tests/metrics_text.h"
#include "tests/run_command.h"
#include "tests/test_cluster.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr absl::Duration kRpcTimeout = absl::Seconds(30);
constexpr absl::Duration kSearchTimeout = absl::Seconds(120);
constexpr int kServing = 1;

constexpr char kClientToken[] = "e2e-client-token-5d1f0c9a";
constexpr char kWorkerToken[] = "e2e-worker-token-8b27e4f3";
constexpr char kAdminToken[] = "e2e-admin-token-c6a90d12";
constexpr char kWrongToken[] = "e2e-wrong-token-00000000";

// The binaries under test, from the command line.
struct Binaries {
  std::string server;
  std::string worker;
  std::string cli;
};

Binaries& TestBinaries() {
  static Binaries* const binaries = new Binaries();
  return *binaries;
}

// A new token file holding `token`; empty (no file) for an empty token.
std::string TokenFile(const std::string& token) {
  static int files = 0;
  return token.empty() ? "" : WriteTestFile(absl::StrCat("token-", ++files), token + "\n");
}

class E2eSecurityTest : public CertificatesTest {
 protected:
  // One server for the suite: TLS, client certificates signed by the test CA required,
  // tokens of every role, and a plaintext health port; one sim worker with its certificate
  // and worker token.
  static void SetUpTestSuite() {
    if (!SharedTestCertificates().ok()) return;
    const std::string tokens = WriteTestFile(
        "tokens", absl::StrCat("# e2e tokens\nclient alice ", kClientToken, "\nworker pool ",
                               kWorkerToken, "\nadmin ops ", kAdminToken, "\n"));
    health_port_file_ = new std::string(TestFilePath("health-port"));

    TestCluster::Options options;
    options.serve_metrics = true;
    options.server_flags = {absl::StrCat("--tls_cert=", certs().server_cert),
                            absl::StrCat("--tls_key=", certs().server_key),
                            absl::StrCat("--tls_client_ca=", certs().ca_cert),
                            absl::StrCat("--token_file=", tokens),
                            "--health_address=127.0.0.1:0",
                            absl::StrCat("--health_port_file=", *health_port_file_)};
    options.client_credentials = Credentials(kClientToken);
    absl::StatusOr<std::unique_ptr<TestCluster>> cluster =
        TestCluster::Start({{"--backend=sim", "--sim_gpus=8", "--sim_probe_seconds=0.05",
                             WorkerFlag("tls_ca"), WorkerFlag("tls_cert"), WorkerFlag("tls_key"),
                             absl::StrCat("--token_file=", TokenFile(kWorkerToken))}},
                           options);
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = cluster->release();
  }

  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
    delete health_port_file_;
  }

  void SetUp() override {
    CertificatesTest::SetUp();
    ASSERT_NE(cluster_, nullptr);
  }

  static std::string WorkerFlag(const std::string& flag) {
    const std::string& path = flag == "tls_ca"     ? certs().ca_cert
                              : flag == "tls_cert" ? certs().client_cert
                                                   : certs().client_key;
    return absl::StrCat("--", flag, "=", path);
  }

  // TLS with the test client certificate and `token` (none when empty).
  static std::shared_ptr<grpc::ChannelCredentials> Credentials(const std::string& token) {
    ClientCredentialsOptions options;
    options.tls_ca = certs().ca_cert;
    options.tls_cert = certs().client_cert;
    options.tls_key = certs().client_key;
    options.token_file = TokenFile(token);
    absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
        LoadClientCredentials(options);
    EXPECT_TRUE(credentials.ok()) << credentials.status();
    return credentials.ok() ? *credentials : grpc::InsecureChannelCredentials();
  }

  static std::shared_ptr<grpc::Channel> Channel(std::shared_ptr<grpc::ChannelCredentials> creds) {
    return grpc::CreateChannel(cluster_->address(), std::move(creds));
  }

  static grpc::StatusCode ListWorkers(std::shared_ptr<grpc::ChannelCredentials> credentials) {
    v1::ListWorkersResponse response;
    return v1::Autotuner::NewStub(Channel(std::move(credentials)))
        ->ListWorkers(ContextWithTimeout(kRpcTimeout).get(), v1::ListWorkersRequest(), &response)
        .error_code();
  }

  // The paratune CLI against the server with `args` and `environment`.
  static CommandResult Cli(const std::vector<std::string>& args,
                           const std::map<std::string, std::string>& environment = {}) {
    std::vector<std::string> argv = {TestBinaries().cli};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.push_back(absl::StrCat("--server=", cluster_->address()));
    CommandOptions options;
    options.environment = environment;
    absl::StatusOr<CommandResult> result = RunCommand(argv, options);
    EXPECT_TRUE(result.ok()) << result.status();
    if (result.ok()) return *std::move(result);
    CommandResult not_run;  // fails every succeeded() check
    not_run.run.exit_code = -1;
    not_run.output = std::string(result.status().message());
    return not_run;
  }

  static std::string* health_port_file_;
  static TestCluster* cluster_;
};

std::string* E2eSecurityTest::health_port_file_ = nullptr;
TestCluster* E2eSecurityTest::cluster_ = nullptr;

TEST_F(E2eSecurityTest, ASearchRunsWithAClientTokenOnAWorkerWithAWorkerToken) {
  absl::StatusOr<v1::Search> search = cluster_->RunSearch(SmallSimSearch(3), kSearchTimeout);
  ASSERT_TRUE(search.ok()) << search.status();
  EXPECT_EQ(search->state(), v1::SUCCEEDED) << search->stop_reason();
  ASSERT_EQ(search->candidates_size(), 3);
  for (const v1::Candidate& candidate : search->candidates()) {
    EXPECT_EQ(candidate.state(), v1::CANDIDATE_PROBED) << candidate.name();
    EXPECT_EQ(candidate.probe_result().outcome(), v1::PROBE_OK) << candidate.name();
    EXPECT_THAT(candidate.worker(), HasSubstr("workers/"));
  }
}

TEST_F(E2eSecurityTest, AClientWithoutTlsCannotConnect) {
  EXPECT_EQ(ListWorkers(grpc::InsecureChannelCredentials()), grpc::StatusCode::UNAVAILABLE);
}

TEST_F(E2eSecurityTest, AClientWithoutATrustedCertificateCannotConnect) {
  ClientCredentialsOptions no_certificate;
  no_certificate.tls_ca = certs().ca_cert;
  EXPECT_EQ(ListWorkers(LoadClientCredentials(no_certificate).value()),
            grpc::StatusCode::UNAVAILABLE);
  ClientCredentialsOptions untrusted = no_certificate;
  untrusted.tls_cert = certs().untrusted_client_cert;
  untrusted.tls_key = certs().untrusted_client_key;
  EXPECT_EQ(ListWorkers(LoadClientCredentials(untrusted).value()), grpc::StatusCode::UNAVAILABLE);
}

TEST_F(E2eSecurityTest, AMissingOrWrongTokenIsUnauthenticated) {
  EXPECT_EQ(ListWorkers(Credentials("")), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(ListWorkers(Credentials(kWrongToken)), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(ListWorkers(Credentials(kClientToken)), grpc::StatusCode::OK);
}

TEST_F(E2eSecurityTest, AWorkerTokenCannotCreateASearch) {
  v1::Search search;
  const grpc::Status status =
      v1::Autotuner::NewStub(Channel(Credentials(kWorkerToken)))
          ->CreateSearch(ContextWithTimeout(kRpcTimeout).get(), SmallSimSearch(1), &search);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(status.error_message(), HasSubstr("a worker token may not call "
                                                "/paratune.v1.Autotuner/CreateSearch"));
}

TEST_F(E2eSecurityTest, AClientTokenCannotRegisterAWorker) {
  v1::RegisterWorkerRequest request;
  request.set_hostname("intruder");
  v1::Gpu& gpu = *request.add_gpus();
  gpu.set_index(0);
  gpu.set_name("simulated H100-80GB");
  gpu.set_memory_bytes(int64_t{80} << 30);
  request.add_backends("sim");
  v1::RegisterWorkerResponse response;
  const grpc::Status status =
      v1::WorkerService::NewStub(Channel(Credentials(kClientToken)))
          ->RegisterWorker(ContextWithTimeout(kRpcTimeout).get(), request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(status.error_message(), HasSubstr("a client token may not call "
                                                "/paratune.v1.WorkerService/RegisterWorker"));
}

TEST_F(E2eSecurityTest, RefusedCallsAreCountedInTheRpcMetrics) {
  const std::string sample =
      "paratune_rpcs_total{method=\"paratune.v1.Autotuner/"
      "CancelSearch\",code=\"PERMISSION_DENIED\"}";
  v1::CancelSearchRequest request;
  request.set_name("searches/1");
  v1::Search search;
  ASSERT_EQ(v1::Autotuner::NewStub(Channel(Credentials(kWorkerToken)))
                ->CancelSearch(ContextWithTimeout(kRpcTimeout).get(), request, &search)
                .error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  absl::StatusOr<HttpResponse> metrics = HttpGet(cluster_->metrics_ports().at(0), "/metrics");
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  EXPECT_EQ(SampleValue(metrics->body, sample).value_or(-1), 1) << metrics->body;
}

TEST_F(E2eSecurityTest, AnAdminTokenMayCallBothServices) {
  EXPECT_EQ(ListWorkers(Credentials(kAdminToken)), grpc::StatusCode::OK);
  // Admitted, then refused by the service itself: no such worker.
  v1::HeartbeatRequest heartbeat;
  heartbeat.set_worker("workers/999999");
  v1::HeartbeatResponse response;
  const grpc::Status status =
      v1::WorkerService::NewStub(Channel(Credentials(kAdminToken)))
          ->Heartbeat(ContextWithTimeout(kRpcTimeout).get(), heartbeat, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND) << status.error_message();
}

TEST_F(E2eSecurityTest, HealthChecksAndReflectionAnswerWithoutAToken) {
  const std::shared_ptr<grpc::Channel> channel = Channel(Credentials(""));
  absl::StatusOr<int> health = CheckHealth(channel);
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_EQ(*health, kServing);
  absl::StatusOr<std::string> services = ListServicesByReflection(channel);
  ASSERT_TRUE(services.ok()) << services.status();
  EXPECT_THAT(*services, HasSubstr("paratune.v1.Autotuner"));
}

TEST_F(E2eSecurityTest, ThePlaintextHealthPortAnswersHealthChecksOnly) {
  // The server writes it before its --port_file, which TestCluster waited for.
  absl::StatusOr<std::string> port = ReadSmallFile(*health_port_file_, 64);
  ASSERT_TRUE(port.ok()) << port.status();
  const std::shared_ptr<grpc::Channel> channel =
      grpc::CreateChannel(absl::StrCat("127.0.0.1:", absl::StripAsciiWhitespace(*port)),
                          grpc::InsecureChannelCredentials());
  absl::StatusOr<int> health = CheckHealth(channel);
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_EQ(*health, kServing);
  v1::ListWorkersResponse response;
  EXPECT_EQ(
      v1::Autotuner::NewStub(channel)
          ->ListWorkers(ContextWithTimeout(kRpcTimeout).get(), v1::ListWorkersRequest(), &response)
          .error_code(),
      grpc::StatusCode::UNIMPLEMENTED);
}

TEST_F(E2eSecurityTest, TheCliTakesItsCredentialsFromFlagsOrTheEnvironment) {
  const std::string token_file = TokenFile(kClientToken);
  const CommandResult with_flags = Cli({"workers", absl::StrCat("--tls_ca=", certs().ca_cert),
                                        absl::StrCat("--tls_cert=", certs().client_cert),
                                        absl::StrCat("--tls_key=", certs().client_key),
                                        absl::StrCat("--token_file=", token_file)});
  EXPECT_TRUE(with_flags.succeeded()) << with_flags.output;
  EXPECT_THAT(with_flags.output, HasSubstr("test-worker-0"));

  const CommandResult from_environment =
      Cli({"workers"}, {{"PARATUNE_TLS_CA", certs().ca_cert},
                        {"PARATUNE_TLS_CERT", certs().client_cert},
                        {"PARATUNE_TLS_KEY", certs().client_key},
                        {"PARATUNE_TOKEN_FILE", token_file}});
  EXPECT_TRUE(from_environment.succeeded()) << from_environment.output;
  EXPECT_THAT(from_environment.output, HasSubstr("test-worker-0"));

  const CommandResult without_token = Cli({"workers", absl::StrCat("--tls_ca=", certs().ca_cert),
                                           absl::StrCat("--tls_cert=", certs().client_cert),
                                           absl::StrCat("--tls_key=", certs().client_key)});
  EXPECT_FALSE(without_token.succeeded());
  EXPECT_THAT(without_token.output, HasSubstr("paratune: UNAUTHENTICATED: "));

  const CommandResult token_without_tls =
      Cli({"workers", absl::StrCat("--token_file=", token_file)});
  EXPECT_FALSE(token_without_tls.succeeded());
  EXPECT_THAT(token_without_tls.output, HasSubstr("needs tls_ca"));
  EXPECT_THAT(token_without_tls.output, Not(HasSubstr(kClientToken)));
}

TEST_F(E2eSecurityTest, AWorkerWithAClientTokenIsRefused) {
  absl::StatusOr<CommandResult> worker =
      RunCommand({TestBinaries().worker, absl::StrCat("--server=", cluster_->address()),
                  "--backend=sim", WorkerFlag("tls_ca"), WorkerFlag("tls_cert"),
                  WorkerFlag("tls_key"), absl::StrCat("--token_file=", TokenFile(kClientToken))});
  ASSERT_TRUE(worker.ok()) << worker.status();
  EXPECT_FALSE(worker->succeeded());
  EXPECT_THAT(worker->output, HasSubstr("PERMISSION_DENIED"));
  EXPECT_THAT(worker->output, Not(HasSubstr(kClientToken)));
}

TEST_F(E2eSecurityTest, TheServerRefusesToListenBeyondLoopbackWithoutTlsAndTokens) {
  absl::StatusOr<CommandResult> server =
      RunCommand({TestBinaries().server, "--address=0.0.0.0:0",
                  "--db=:memory:", absl::StrCat("--tls_cert=", certs().server_cert),
                  absl::StrCat("--tls_key=", certs().server_key)});
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_FALSE(server->succeeded());
  EXPECT_THAT(server->output, HasSubstr("needs TLS and bearer tokens"));
}

TEST_F(E2eSecurityTest, TheServerNamesTheBadLineOfItsTokenFileWithoutQuotingIt) {
  const std::string tokens = WriteTestFile(
      "bad-tokens", absl::StrCat("client alice ", kClientToken, "\n", kAdminToken, " ops admin\n"));
  absl::StatusOr<CommandResult> server = RunCommand(
      {TestBinaries().server, "--address=127.0.0.1:0",
       "--db=:memory:", absl::StrCat("--tls_cert=", certs().server_cert),
       absl::StrCat("--tls_key=", certs().server_key), absl::StrCat("--token_file=", tokens)});
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_FALSE(server->succeeded());
  EXPECT_THAT(server->output, HasSubstr(absl::StrCat("token_file (\\\"", tokens, "\\\") line 2")));
  EXPECT_THAT(server->output, Not(HasSubstr(kAdminToken)));
  EXPECT_THAT(server->output, Not(HasSubstr(kClientToken)));
}

TEST_F(E2eSecurityTest, TheServerRefusesTheOldTwoFieldTokenFileSayingTheNewForm) {
  const std::string tokens =
      WriteTestFile("old-tokens", absl::StrCat("# before principals\nclient ", kClientToken, "\n"));
  absl::StatusOr<CommandResult> server = RunCommand(
      {TestBinaries().server, "--address=127.0.0.1:0",
       "--db=:memory:", absl::StrCat("--tls_cert=", certs().server_cert),
       absl::StrCat("--tls_key=", certs().server_key), absl::StrCat("--token_file=", tokens)});
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_FALSE(server->succeeded());
  EXPECT_THAT(server->output, HasSubstr("line 2: has the old two-field form ROLE TOKEN"));
  EXPECT_THAT(server->output, HasSubstr("ROLE NAME TOKEN"));
  EXPECT_THAT(server->output, Not(HasSubstr(kClientToken)));
}

}  // namespace
}  // namespace paratune

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (!paratune::SetTestBinaries(argc, argv) || argc < 4) {
    std::fprintf(stderr, "usage: e2e_security_test PARATUNE_SERVER PARATUNE_WORKER PARATUNE\n");
    return 2;
  }
  paratune::TestBinaries() = {argv[1], argv[2], argv[3]};
  return RUN_ALL_TESTS();
}
