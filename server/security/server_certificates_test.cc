#include "server/security/server_certificates.h"

#include <cstdio>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/client_credentials.h"
#include "common/grpc_client.h"
#include "common/grpc_server.h"
#include "common/small_file.h"
#include "common/test_certificates.h"
#include "common/test_file.h"
#include "gmock/gmock.h"
#include "grpcpp/create_channel.h"
#include "gtest/gtest.h"
#include "proto/autotuner_service.grpc.pb.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;

constexpr absl::Duration kRpcTimeout = absl::Seconds(30);

std::string Text(const std::string& path) {
  absl::StatusOr<std::string> text = ReadSmallFile(path, 1 << 20);
  EXPECT_TRUE(text.ok()) << text.status();
  return text.value_or("");
}

// The server has no service, so every call that gets through the handshake is UNIMPLEMENTED.
class ServerCertificatesTest : public CertificatesTest {
 protected:
  void SetUp() override {
    CertificatesTest::SetUp();
    files_.tls_cert = WriteTestFile("server.crt", Text(certs().server_cert));
    files_.tls_key = WriteTestFile("server.key", Text(certs().server_key));
    files_.tls_client_ca = certs().ca_cert;
  }

  // Loads `files` into certificates_ and starts a server on their credentials, replacing any
  // earlier server and certificates (in that order: certificates outlive their server).
  void Serve(const ServerCertificates::Files& files) {
    server_ = StartedGrpcServer();
    absl::StatusOr<std::unique_ptr<ServerCertificates>> certificates =
        ServerCertificates::Load(files);
    ASSERT_TRUE(certificates.ok()) << certificates.status();
    certificates_ = *std::move(certificates);
    GrpcServerOptions options;
    options.address = "127.0.0.1:0";
    options.credentials = certificates_->Credentials();
    absl::StatusOr<StartedGrpcServer> server = StartGrpcServer(std::move(options));
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
  }

  // Replaces the server's files on disk with `cert` and `key`.
  void Install(const std::string& cert, const std::string& key) {
    WriteTestFile("server.crt", Text(cert));
    WriteTestFile("server.key", Text(key));
  }

  // A channel of its own connection (not shared with earlier channels), with the test client
  // certificate unless `with_certificate` is false.
  std::shared_ptr<grpc::Channel> NewConnection(bool with_certificate = true) {
    ClientCredentialsOptions options;
    options.tls_ca = certs().ca_cert;
    if (with_certificate) {
      options.tls_cert = certs().client_cert;
      options.tls_key = certs().client_key;
    }
    grpc::ChannelArguments arguments;
    arguments.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    return grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", server_.port),
                                     LoadClientCredentials(options).value(), arguments);
  }

  // The server certificate (PEM) a call on `channel` saw; the call's status when it failed
  // before reaching the server.
  static absl::StatusOr<std::string> PresentedCertificate(
      const std::shared_ptr<grpc::Channel>& channel) {
    std::unique_ptr<grpc::ClientContext> context = ContextWithTimeout(kRpcTimeout);
    v1::ListWorkersResponse response;
    const grpc::Status status = v1::Autotuner::NewStub(channel)->ListWorkers(
        context.get(), v1::ListWorkersRequest(), &response);
    if (status.error_code() != grpc::StatusCode::UNIMPLEMENTED) {
      return absl::UnavailableError(status.error_message());
    }
    const std::vector<grpc::string_ref> pem =
        context->auth_context()->FindPropertyValues("x509_pem_cert");
    if (pem.size() != 1) return absl::NotFoundError("no server certificate");
    return std::string(pem.front().data(), pem.front().size());
  }

  ServerCertificates::Files files_;
  std::unique_ptr<ServerCertificates> certificates_;
  StartedGrpcServer server_;
};

TEST_F(ServerCertificatesTest, LoadChecksTheFilesNamingTheFlag) {
  ServerCertificates::Files mismatched = files_;
  mismatched.tls_key = certs().client_key;
  const absl::Status key = ServerCertificates::Load(mismatched).status();
  EXPECT_EQ(key.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(key.message(), HasSubstr(absl::StrCat("tls_key (\"", certs().client_key,
                                                    "\") is not the private key")));

  ServerCertificates::Files missing_ca = files_;
  missing_ca.tls_client_ca = TestFilePath("no-such-ca.crt");
  const absl::Status ca = ServerCertificates::Load(missing_ca).status();
  EXPECT_EQ(ca.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(ca.message(), HasSubstr("tls_client_ca"));
}

TEST_F(ServerCertificatesTest, ClientsNeedACertificateOnlyWithAClientCa) {
  Serve(files_);
  EXPECT_TRUE(certificates_->verifies_clients());
  EXPECT_TRUE(PresentedCertificate(NewConnection()).ok());
  EXPECT_EQ(PresentedCertificate(NewConnection(/*with_certificate=*/false)).status().code(),
            absl::StatusCode::kUnavailable);

  ServerCertificates::Files tls_only = files_;
  tls_only.tls_client_ca.clear();
  Serve(tls_only);
  EXPECT_FALSE(certificates_->verifies_clients());
  EXPECT_TRUE(PresentedCertificate(NewConnection(/*with_certificate=*/false)).ok());
}

TEST_F(ServerCertificatesTest, AReloadReachesNewConnectionsWhileOpenOnesGoOn) {
  Serve(files_);
  const std::string original = Text(certs().server_cert);
  const std::string renewed = Text(certs().renewed_server_cert);
  ASSERT_NE(original, renewed);
  const std::shared_ptr<grpc::Channel> open = NewConnection();
  EXPECT_EQ(PresentedCertificate(open).value_or(""), original);

  Install(certs().renewed_server_cert, certs().renewed_server_key);
  const absl::Status reloaded = certificates_->Reload();
  ASSERT_TRUE(reloaded.ok()) << reloaded;
  // gRPC's watcher looks every kRefreshSeconds: poll new connections until one gets it.
  absl::StatusOr<std::string> presented;
  for (const absl::Time deadline = absl::Now() + kRpcTimeout; absl::Now() < deadline;
       absl::SleepFor(absl::Milliseconds(50))) {
    presented = PresentedCertificate(NewConnection());
    ASSERT_TRUE(presented.ok()) << presented.status();
    if (*presented == renewed) break;
    EXPECT_EQ(*presented, original);
  }
  EXPECT_EQ(presented.value_or(""), renewed);
  // The connection opened before the reload is still up, on the certificate it began with.
  EXPECT_EQ(PresentedCertificate(open).value_or(""), original);
  EXPECT_EQ(open->GetState(/*try_to_connect=*/false), GRPC_CHANNEL_READY);
}

TEST_F(ServerCertificatesTest, AFailedReloadLeavesTheCertificatesInForce) {
  Serve(files_);
  const std::string original = Text(certs().server_cert);

  // A renewal caught half-way: the new certificate, still the old key.
  Install(certs().renewed_server_cert, certs().server_key);
  const absl::Status mismatched = certificates_->Reload();
  EXPECT_EQ(mismatched.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(mismatched.message(), HasSubstr("is not the private key of the certificate in"));
  std::remove(files_.tls_cert.c_str());
  EXPECT_EQ(certificates_->Reload().code(), absl::StatusCode::kNotFound);

  // Had either reached gRPC's watcher, which looks every second, handshakes would fail by now.
  absl::SleepFor(absl::Seconds(ServerCertificates::kRefreshSeconds) * 1.5);
  EXPECT_EQ(PresentedCertificate(NewConnection()).value_or("failed"), original);
}

}  // namespace
}  // namespace paratune
