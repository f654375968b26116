#include "common/client_credentials.h"

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/grpc_introspection.h"
#include "common/grpc_server.h"
#include "common/small_file.h"
#include "common/test_certificates.h"
#include "common/test_file.h"
#include "gmock/gmock.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/auth_metadata_processor.h"
#include "grpcpp/security/server_credentials.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr int kServing = 1;
constexpr char kToken[] = "client-token-0123456789";

// Accepts every call and remembers the last authorization metadata it saw.
class RecordingProcessor : public grpc::AuthMetadataProcessor {
 public:
  bool IsBlocking() const override { return false; }
  grpc::Status Process(const InputMetadata& metadata, grpc::AuthContext*, OutputMetadata*,
                       OutputMetadata*) override {
    absl::MutexLock lock(&mu_);
    const auto found = metadata.find("authorization");
    authorization_ =
        found == metadata.end() ? "" : std::string(found->second.data(), found->second.size());
    return grpc::Status::OK;
  }
  std::string authorization() {
    absl::MutexLock lock(&mu_);
    return authorization_;
  }

 private:
  absl::Mutex mu_;
  std::string authorization_ ABSL_GUARDED_BY(mu_);
};

class ClientCredentialsTest : public CertificatesTest {
 protected:
  // A server on 127.0.0.1 that requires client certificates signed by the test CA.
  static void SetUpTestSuite() {
    if (!SharedTestCertificates().ok()) return;
    grpc::SslServerCredentialsOptions tls(
        GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
    tls.pem_root_certs = *ReadSmallFile(certs().ca_cert, 1 << 20);
    tls.pem_key_cert_pairs.push_back({*ReadSmallFile(certs().server_key, 1 << 20),
                                      *ReadSmallFile(certs().server_cert, 1 << 20)});
    processor_ = std::make_shared<RecordingProcessor>();
    GrpcServerOptions options;
    options.address = "127.0.0.1:0";
    options.credentials = grpc::SslServerCredentials(tls);
    options.credentials->SetAuthMetadataProcessor(processor_);
    absl::StatusOr<StartedGrpcServer> started = StartGrpcServer(std::move(options));
    ASSERT_TRUE(started.ok()) << started.status();
    server_ = new StartedGrpcServer(*std::move(started));
  }

  static void TearDownTestSuite() {
    delete server_;
    processor_.reset();
  }

  void SetUp() override {
    CertificatesTest::SetUp();
    ASSERT_NE(server_, nullptr);
  }

  static ClientCredentialsOptions MutualTls() {
    ClientCredentialsOptions options;
    options.tls_ca = certs().ca_cert;
    options.tls_cert = certs().client_cert;
    options.tls_key = certs().client_key;
    return options;
  }

  static absl::StatusOr<int> Health(const std::shared_ptr<grpc::ChannelCredentials>& credentials) {
    return CheckHealth(grpc::CreateChannel(absl::StrCat("127.0.0.1:", server_->port), credentials));
  }

  static StartedGrpcServer* server_;
  static std::shared_ptr<RecordingProcessor> processor_;
};

StartedGrpcServer* ClientCredentialsTest::server_ = nullptr;
std::shared_ptr<RecordingProcessor> ClientCredentialsTest::processor_;

TEST_F(ClientCredentialsTest, NoOptionsArePlaintext) {
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials = LoadClientCredentials({});
  ASSERT_TRUE(credentials.ok()) << credentials.status();
  // A TLS server does not talk to it.
  EXPECT_EQ(Health(*credentials).status().code(), absl::StatusCode::kUnavailable);
}

TEST_F(ClientCredentialsTest, MutualTlsReachesTheServer) {
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      LoadClientCredentials(MutualTls());
  ASSERT_TRUE(credentials.ok()) << credentials.status();
  absl::StatusOr<int> health = Health(*credentials);
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_EQ(*health, kServing);
  EXPECT_EQ(processor_->authorization(), "");
}

TEST_F(ClientCredentialsTest, TheTokenIsSentAsABearerToken) {
  ClientCredentialsOptions options = MutualTls();
  options.token_file = WriteTestFile("token", absl::StrCat(kToken, "\n"));
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      LoadClientCredentials(options);
  ASSERT_TRUE(credentials.ok()) << credentials.status();
  ASSERT_TRUE(Health(*credentials).ok());
  EXPECT_EQ(processor_->authorization(), absl::StrCat("Bearer ", kToken));
}

TEST_F(ClientCredentialsTest, WithoutAClientCertificateTheHandshakeFails) {
  ClientCredentialsOptions options;
  options.tls_ca = certs().ca_cert;
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      LoadClientCredentials(options);
  ASSERT_TRUE(credentials.ok()) << credentials.status();
  EXPECT_EQ(Health(*credentials).status().code(), absl::StatusCode::kUnavailable);
}

TEST_F(ClientCredentialsTest, AClientCertificateOfAnotherCaIsRefused) {
  ClientCredentialsOptions options = MutualTls();
  options.tls_cert = certs().untrusted_client_cert;
  options.tls_key = certs().untrusted_client_key;
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      LoadClientCredentials(options);
  ASSERT_TRUE(credentials.ok()) << credentials.status();
  EXPECT_EQ(Health(*credentials).status().code(), absl::StatusCode::kUnavailable);
}

TEST_F(ClientCredentialsTest, AServerSignedByAnotherCaIsRefused) {
  ClientCredentialsOptions options = MutualTls();
  // The untrusted client's certificate is not a CA of the server's certificate.
  options.tls_ca = certs().untrusted_client_cert;
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      LoadClientCredentials(options);
  ASSERT_TRUE(credentials.ok()) << credentials.status();
  EXPECT_EQ(Health(*credentials).status().code(), absl::StatusCode::kUnavailable);
}

TEST_F(ClientCredentialsTest, CertificateKeyOrTokenWithoutTlsCaIsRefused) {
  ClientCredentialsOptions certificate;
  certificate.tls_cert = certs().client_cert;
  ClientCredentialsOptions key;
  key.tls_key = certs().client_key;
  ClientCredentialsOptions token;
  token.token_file = WriteTestFile("plain-token", kToken);
  for (const auto& [options, option] :
       {std::pair{certificate, "tls_cert"}, {key, "tls_key"}, {token, "token_file"}}) {
    const absl::Status status = LoadClientCredentials(options).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << option;
    EXPECT_THAT(status.message(), HasSubstr(absl::StrCat(option, " (\"")));
    EXPECT_THAT(status.message(), HasSubstr("needs tls_ca"));
  }
}

TEST_F(ClientCredentialsTest, FileErrorsNameTheOption) {
  ClientCredentialsOptions ca = MutualTls();
  ca.tls_ca = certs().client_key;
  EXPECT_THAT(LoadClientCredentials(ca).status().message(), HasSubstr("tls_ca (\""));

  ClientCredentialsOptions certificate = MutualTls();
  certificate.tls_key = "";
  EXPECT_THAT(LoadClientCredentials(certificate).status().message(), HasSubstr("go together"));

  ClientCredentialsOptions key = MutualTls();
  key.tls_key = certs().server_key;
  EXPECT_THAT(LoadClientCredentials(key).status().message(), HasSubstr("is not the private key"));

  ClientCredentialsOptions token = MutualTls();
  token.token_file = WriteTestFile("bad-token", "short\n");
  const absl::Status status = LoadClientCredentials(token).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("token_file (\""));
  EXPECT_THAT(status.message(), Not(HasSubstr("short")));
}

}  // namespace
}  // namespace paratune
