// End to end (DESIGN.md §11, docs/operations.md "Security"): a real paratune-server with mutual
// TLS and a token file that binds one test client certificate (CN paratune-node) to a worker
// principal, on 127.0.0.1 port 0. A worker names its principal with its certificate alone;
// SIGHUP reloads the server's certificate and the token file without dropping connections,
// and every reload is counted in the server's metrics, a failed one leaving the old
// credentials in force. No worker daemon runs.
#include <signal.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/client_credentials.h"
#include "common/grpc_client.h"
#include "common/grpc_status.h"
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
#include "tests/process_harness.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;

constexpr absl::Duration kRpcTimeout = absl::Seconds(30);
constexpr absl::Duration kStartTimeout = absl::Seconds(60);

constexpr char kAliceToken[] = "e2e-alice-token-6b1d9e0f";
constexpr char kOpsToken[] = "e2e-ops-token-2c7a4f58";

std::string& ServerBinary() {
  static std::string* const binary = new std::string();
  return *binary;
}

std::string Text(const std::string& path) {
  absl::StatusOr<std::string> text = ReadSmallFile(path, 1 << 20);
  EXPECT_TRUE(text.ok()) << text.status();
  return text.value_or("");
}

std::string Reloads(absl::string_view what, absl::string_view result) {
  return absl::StrCat("paratune_credential_reloads_total{what=\"", what, "\",result=\"", result,
                      "\"}");
}

class E2eCredentialsTest : public CertificatesTest {
 protected:
  void SetUp() override {
    CertificatesTest::SetUp();
    server_cert_ = WriteTestFile("server.crt", Text(certs().server_cert));
    server_key_ = WriteTestFile("server.key", Text(certs().server_key));
    token_file_ = WriteTestFile(
        "tokens", absl::StrCat("# e2e credentials\nclient alice ", kAliceToken, "\nadmin ops ",
                               kOpsToken, "\nworker pool-cert cert:paratune-node\n"));
    const std::string port_file = TestFilePath("credentials-port");
    const std::string metrics_port_file = TestFilePath("credentials-metrics-port");
    std::remove(port_file.c_str());
    std::remove(metrics_port_file.c_str());
    absl::StatusOr<std::unique_ptr<ChildProcess>> server = ChildProcess::Spawn(
        {ServerBinary(), "--address=127.0.0.1:0", absl::StrCat("--port_file=", port_file),
         "--db=:memory:", absl::StrCat("--tls_cert=", server_cert_),
         absl::StrCat("--tls_key=", server_key_), absl::StrCat("--tls_client_ca=", certs().ca_cert),
         absl::StrCat("--token_file=", token_file_), "--metrics_address=127.0.0.1:0",
         absl::StrCat("--metrics_port_file=", metrics_port_file)});
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    absl::StatusOr<int> port = WaitForPortFile(port_file, kStartTimeout, *server_);
    ASSERT_TRUE(port.ok()) << port.status();
    address_ = absl::StrCat("127.0.0.1:", *port);
    absl::StatusOr<int> metrics_port = WaitForPortFile(metrics_port_file, kStartTimeout, *server_);
    ASSERT_TRUE(metrics_port.ok()) << metrics_port.status();
    metrics_port_ = *metrics_port;
  }

  // A channel of its own connection (not shared with earlier channels) presenting a client
  // certificate, the unbound one or the bound node certificate, and, when not empty, `token`.
  enum class Certificate { kUnbound, kBound };
  std::shared_ptr<grpc::Channel> NewConnection(const std::string& token,
                                               Certificate certificate = Certificate::kUnbound) {
    ClientCredentialsOptions options;
    options.tls_ca = certs().ca_cert;
    const bool bound = certificate == Certificate::kBound;
    options.tls_cert = bound ? certs().node_cert : certs().client_cert;
    options.tls_key = bound ? certs().node_key : certs().client_key;
    if (!token.empty()) {
      options.token_file = WriteTestFile(absl::StrCat("token-", ++token_files_), token);
    }
    absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
        LoadClientCredentials(options);
    EXPECT_TRUE(credentials.ok()) << credentials.status();
    grpc::ChannelArguments arguments;
    arguments.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    return grpc::CreateCustomChannel(
        address_, credentials.ok() ? *credentials : grpc::InsecureChannelCredentials(), arguments);
  }

  // The server certificate (PEM) a ListWorkers call on `channel` was answered over; the
  // call's status when it failed.
  static absl::StatusOr<std::string> ListWorkersOver(const std::shared_ptr<grpc::Channel>& channel,
                                                     v1::ListWorkersResponse* response) {
    std::unique_ptr<grpc::ClientContext> context = ContextWithTimeout(kRpcTimeout);
    const grpc::Status status = v1::Autotuner::NewStub(channel)->ListWorkers(
        context.get(), v1::ListWorkersRequest(), response);
    if (!status.ok()) return FromGrpcStatus(status);
    const std::vector<grpc::string_ref> pem =
        context->auth_context()->FindPropertyValues("x509_pem_cert");
    if (pem.size() != 1) return absl::NotFoundError("no server certificate");
    return std::string(pem.front().data(), pem.front().size());
  }

  static absl::StatusOr<std::string> PresentedCertificate(
      const std::shared_ptr<grpc::Channel>& channel) {
    v1::ListWorkersResponse response;
    return ListWorkersOver(channel, &response);
  }

  // The value of `sample` in the server's metrics; -1 when absent.
  double Metric(const std::string& sample) {
    absl::StatusOr<HttpResponse> metrics = HttpGet(metrics_port_, "/metrics");
    EXPECT_TRUE(metrics.ok()) << metrics.status();
    if (!metrics.ok()) return -1;
    return SampleValue(metrics->body, sample).value_or(-1);
  }

  // Sends SIGHUP and waits until the server has counted the reload of its certificates (the
  // last part it reloads), `count` of them with `result` so far.
  void Reload(absl::string_view result, double count) {
    ASSERT_EQ(kill(server_->pid(), SIGHUP), 0);
    for (const absl::Time deadline = absl::Now() + kRpcTimeout;
         absl::Now() < deadline && Metric(Reloads("certificates", result)) < count;
         absl::SleepFor(absl::Milliseconds(20))) {
    }
    ASSERT_EQ(Metric(Reloads("certificates", result)), count);
  }

  std::string server_cert_;
  std::string server_key_;
  std::string token_file_;
  std::unique_ptr<ChildProcess> server_;
  std::string address_;
  int metrics_port_ = 0;
  int token_files_ = 0;
};

TEST_F(E2eCredentialsTest, SighupReloadsTheServerCertificateWithoutDroppingConnections) {
  const std::string original = Text(certs().server_cert);
  const std::string renewed = Text(certs().renewed_server_cert);
  const std::shared_ptr<grpc::Channel> open = NewConnection(kAliceToken);
  EXPECT_EQ(PresentedCertificate(open).value_or(""), original);
  EXPECT_EQ(Metric("paratune_principals"), 3);
  EXPECT_EQ(Metric(Reloads("certificates", "ok")), 0);

  WriteTestFile("server.crt", renewed);
  WriteTestFile("server.key", Text(certs().renewed_server_key));
  Reload("ok", 1);
  // gRPC looks at the reloaded certificate once a second: poll new connections.
  absl::StatusOr<std::string> presented;
  for (const absl::Time deadline = absl::Now() + kRpcTimeout; absl::Now() < deadline;
       absl::SleepFor(absl::Milliseconds(50))) {
    presented = PresentedCertificate(NewConnection(kAliceToken));
    ASSERT_TRUE(presented.ok()) << presented.status();
    if (*presented == renewed) break;
  }
  EXPECT_EQ(presented.value_or(""), renewed);
  // The connection opened before the reload goes on, on the certificate it began with.
  EXPECT_EQ(PresentedCertificate(open).value_or(""), original);
  EXPECT_EQ(Metric(Reloads("tokens", "ok")), 1);
  EXPECT_EQ(Metric(Reloads("certificates", "error")), 0);
  EXPECT_EQ(Metric(Reloads("tokens", "error")), 0);
}

TEST_F(E2eCredentialsTest, AFailedReloadIsCountedAndLeavesTheOldCredentialsInForce) {
  const std::string original = Text(certs().server_cert);
  // A renewal caught half-way (the new certificate, still the old key) and a token file with a
  // bad line.
  WriteTestFile("server.crt", Text(certs().renewed_server_cert));
  WriteTestFile("tokens", "client alice\n");
  Reload("error", 1);
  EXPECT_EQ(Metric(Reloads("tokens", "error")), 1);
  EXPECT_EQ(Metric(Reloads("certificates", "ok")), 0);
  EXPECT_EQ(Metric("paratune_principals"), 3);

  // Had the bad pair reached gRPC, which looks every second, handshakes would fail by now.
  absl::SleepFor(absl::Milliseconds(1500));
  EXPECT_EQ(PresentedCertificate(NewConnection(kAliceToken)).value_or("failed"), original);
}

TEST_F(E2eCredentialsTest, ABoundWorkerCertificateNamesItsPrincipalWithoutAToken) {
  const std::shared_ptr<grpc::Channel> worker = NewConnection("", Certificate::kBound);
  v1::RegisterWorkerRequest registration;
  registration.set_hostname("node-cert");
  v1::Gpu& gpu = *registration.add_gpus();
  gpu.set_name("simulated H100-80GB");
  gpu.set_memory_bytes(85'520'809'984);
  registration.add_backends("sim");
  v1::RegisterWorkerResponse registered;
  const grpc::Status status = v1::WorkerService::NewStub(worker)->RegisterWorker(
      ContextWithTimeout(kRpcTimeout).get(), registration, &registered);
  ASSERT_TRUE(status.ok()) << status.error_message();

  v1::ListWorkersResponse workers;
  ASSERT_TRUE(ListWorkersOver(NewConnection(kOpsToken), &workers).ok());
  ASSERT_EQ(workers.workers_size(), 1);
  EXPECT_EQ(workers.workers(0).registered_by(), "pool-cert");

  // The certificate's principal is a worker: no Autotuner call.
  const absl::Status autotuner = PresentedCertificate(worker).status();
  EXPECT_EQ(autotuner.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(autotuner.message(), HasSubstr("a worker certificate may not call"));
  // A token of another principal on the certificate's connection is refused, not preferred.
  const absl::Status mixed =
      PresentedCertificate(NewConnection(kOpsToken, Certificate::kBound)).status();
  EXPECT_EQ(mixed.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(mixed.message(),
              HasSubstr("the bearer token names the principal ops but the client certificate "
                        "names pool-cert"));
  // An unbound certificate without a token names no one.
  const absl::Status unbound = PresentedCertificate(NewConnection("")).status();
  EXPECT_EQ(unbound.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(unbound.message(), HasSubstr("the client certificate (CN \"paratune-worker\")"));
}

}  // namespace
}  // namespace paratune

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (argc < 2) {
    std::fprintf(stderr, "usage: e2e_credentials_test PARATUNE_SERVER\n");
    return 2;
  }
  paratune::ServerBinary() = argv[1];
  return RUN_ALL_TESTS();
}
