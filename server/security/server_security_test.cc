#include "server/security/server_security.h"

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/client_credentials.h"
#include "common/grpc_client.h"
#include "common/grpc_introspection.h"
#include "common/grpc_server.h"
#include "common/test_certificates.h"
#include "common/test_file.h"
#include "gmock/gmock.h"
#include "grpcpp/create_channel.h"
#include "gtest/gtest.h"
#include "proto/autotuner_service.grpc.pb.h"

namespace paratune {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr int kServing = 1;
constexpr char kClientToken[] = "client-token-0123456789";
constexpr char kWorkerToken[] = "worker-token-0123456789";

class ServerSecurityTest : public CertificatesTest {
 protected:
  static ServerSecurityOptions Tls() {
    ServerSecurityOptions options;
    options.tls_cert = certs().server_cert;
    options.tls_key = certs().server_key;
    return options;
  }

  static ServerSecurityOptions MutualTlsWithTokens() {
    ServerSecurityOptions options = Tls();
    options.tls_client_ca = certs().ca_cert;
    options.token_file = WriteTestFile(
        "tokens",
        absl::StrCat("client alice ", kClientToken, "\nworker pool ", kWorkerToken, "\n"));
    return options;
  }

  // A client of `port` with the test client certificate and, when not empty, `token`.
  static std::shared_ptr<grpc::Channel> Channel(int port, const std::string& token) {
    ClientCredentialsOptions options;
    options.tls_ca = certs().ca_cert;
    options.tls_cert = certs().client_cert;
    options.tls_key = certs().client_key;
    if (!token.empty()) options.token_file = WriteTestFile("client-token", token);
    return grpc::CreateChannel(absl::StrCat("127.0.0.1:", port),
                               LoadClientCredentials(options).value());
  }
};

TEST(WorkerCredentialFlagsTest, WorkersNeedWhatTheServerChecks) {
  ServerSecurity security;
  EXPECT_THAT(WorkerCredentialFlags(security), IsEmpty());
  security.tls = true;
  EXPECT_THAT(WorkerCredentialFlags(security), ElementsAre("tls_ca"));
  security.tokens = 3;
  EXPECT_THAT(WorkerCredentialFlags(security), ElementsAre("tls_ca", "token_file"));
  security.mutual_tls = true;
  EXPECT_THAT(WorkerCredentialFlags(security),
              ElementsAre("tls_ca", "tls_cert", "tls_key", "token_file"));
  // Workers may name their principal with their certificate instead.
  security.worker_certificates = true;
  EXPECT_THAT(WorkerCredentialFlags(security), ElementsAre("tls_ca", "tls_cert", "tls_key"));
}

TEST_F(ServerSecurityTest, NoOptionsArePlaintextWithoutTokens) {
  absl::StatusOr<ServerSecurity> security = LoadServerSecurity({});
  ASSERT_TRUE(security.ok()) << security.status();
  EXPECT_NE(security->credentials, nullptr);
  EXPECT_FALSE(security->tls);
  EXPECT_FALSE(security->mutual_tls);
  EXPECT_EQ(security->tokens, 0);
  EXPECT_FALSE(security->protects_remote_access());
}

TEST_F(ServerSecurityTest, TlsAloneDoesNotProtectRemoteAccess) {
  absl::StatusOr<ServerSecurity> security = LoadServerSecurity(Tls());
  ASSERT_TRUE(security.ok()) << security.status();
  EXPECT_TRUE(security->tls);
  EXPECT_FALSE(security->mutual_tls);
  EXPECT_FALSE(security->protects_remote_access());
}

TEST_F(ServerSecurityTest, TlsWithTokensProtectsRemoteAccess) {
  absl::StatusOr<ServerSecurity> security = LoadServerSecurity(MutualTlsWithTokens());
  ASSERT_TRUE(security.ok()) << security.status();
  EXPECT_TRUE(security->tls);
  EXPECT_TRUE(security->mutual_tls);
  EXPECT_EQ(security->tokens, 2);
  EXPECT_EQ(security->bound_certificates, 0);
  EXPECT_TRUE(security->protects_remote_access());
}

TEST_F(ServerSecurityTest, BoundCertificatesAloneProtectRemoteAccess) {
  ServerSecurityOptions options = MutualTlsWithTokens();
  options.token_file = WriteTestFile("certificate-tokens", "worker pool cert:paratune-worker\n");
  absl::StatusOr<ServerSecurity> security = LoadServerSecurity(options);
  ASSERT_TRUE(security.ok()) << security.status();
  EXPECT_EQ(security->tokens, 0);
  EXPECT_EQ(security->bound_certificates, 1);
  EXPECT_TRUE(security->worker_certificates);
  EXPECT_TRUE(security->protects_remote_access());
}

TEST_F(ServerSecurityTest, BindingACertificateNeedsAClientCa) {
  ServerSecurityOptions options = Tls();
  options.token_file = WriteTestFile(
      "certificate-tokens",
      absl::StrCat("client alice ", kClientToken, "\nworker pool cert:paratune-worker\n"));
  const absl::Status status = LoadServerSecurity(options).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr(absl::StrCat("token_file (\"", options.token_file,
                                                       "\") line 2: binds a client certificate")));
}

TEST_F(ServerSecurityTest, ClientCaOrTokensWithoutTlsAreRefused) {
  ServerSecurityOptions client_ca;
  client_ca.tls_client_ca = certs().ca_cert;
  const absl::Status ca_status = LoadServerSecurity(client_ca).status();
  EXPECT_EQ(ca_status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(ca_status.message(), HasSubstr("tls_client_ca (\""));
  EXPECT_THAT(ca_status.message(), HasSubstr("needs tls_cert and tls_key"));

  ServerSecurityOptions tokens;
  tokens.token_file = MutualTlsWithTokens().token_file;
  const absl::Status token_status = LoadServerSecurity(tokens).status();
  EXPECT_EQ(token_status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(token_status.message(), HasSubstr("token_file (\""));
  EXPECT_THAT(token_status.message(), HasSubstr("in the clear"));
}

TEST_F(ServerSecurityTest, FileErrorsNameTheOptionFileAndLine) {
  ServerSecurityOptions key = Tls();
  key.tls_key = certs().client_key;
  EXPECT_THAT(LoadServerSecurity(key).status().message(), HasSubstr("is not the private key"));

  ServerSecurityOptions client_ca = MutualTlsWithTokens();
  client_ca.tls_client_ca = certs().server_key;
  EXPECT_THAT(LoadServerSecurity(client_ca).status().message(),
              HasSubstr(absl::StrCat("tls_client_ca (\"", certs().server_key, "\")")));

  ServerSecurityOptions tokens = MutualTlsWithTokens();
  tokens.token_file = WriteTestFile("bad-tokens", "# tokens\nclient\n");
  const absl::Status status = LoadServerSecurity(tokens).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(),
              HasSubstr(absl::StrCat("token_file (\"", tokens.token_file, "\") line 2")));

  tokens.token_file = TestFilePath("missing-tokens");
  EXPECT_EQ(LoadServerSecurity(tokens).status().code(), absl::StatusCode::kNotFound);
}

// The credentials on a real port: TLS, client certificates and tokens are all enforced. The
// server has no service but health and reflection, so an admitted call is UNIMPLEMENTED.
TEST_F(ServerSecurityTest, TheCredentialsEnforceTlsClientCertificatesAndTokens) {
  absl::StatusOr<ServerSecurity> security = LoadServerSecurity(MutualTlsWithTokens());
  ASSERT_TRUE(security.ok()) << security.status();
  GrpcServerOptions options;
  options.address = "127.0.0.1:0";
  options.credentials = security->credentials;
  absl::StatusOr<StartedGrpcServer> server = StartGrpcServer(std::move(options));
  ASSERT_TRUE(server.ok()) << server.status();

  auto list_workers = [&](const std::shared_ptr<grpc::Channel>& channel) {
    v1::ListWorkersResponse response;
    return v1::Autotuner::NewStub(channel)
        ->ListWorkers(ContextWithTimeout(absl::Seconds(30)).get(), v1::ListWorkersRequest(),
                      &response)
        .error_code();
  };
  EXPECT_EQ(list_workers(Channel(server->port, kClientToken)), grpc::StatusCode::UNIMPLEMENTED);
  EXPECT_EQ(list_workers(Channel(server->port, kWorkerToken)), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(list_workers(Channel(server->port, "")), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(list_workers(grpc::CreateChannel(absl::StrCat("127.0.0.1:", server->port),
                                             grpc::InsecureChannelCredentials())),
            grpc::StatusCode::UNAVAILABLE);

  absl::StatusOr<int> health = CheckHealth(Channel(server->port, ""));
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_EQ(*health, kServing);
}

TEST_F(ServerSecurityTest, AReloadReplacesTheTokensAndAFailedOneKeepsThem) {
  ServerSecurityOptions options = MutualTlsWithTokens();
  absl::StatusOr<ServerSecurity> security = LoadServerSecurity(options);
  ASSERT_TRUE(security.ok()) << security.status();
  ASSERT_NE(security->token_processor, nullptr);
  GrpcServerOptions grpc_options;
  grpc_options.address = "127.0.0.1:0";
  grpc_options.credentials = security->credentials;
  absl::StatusOr<StartedGrpcServer> server = StartGrpcServer(std::move(grpc_options));
  ASSERT_TRUE(server.ok()) << server.status();
  // The server serves no method, so a call the token check admits gets UNIMPLEMENTED and one
  // it refuses UNAUTHENTICATED: the code says which tokens are in force.
  constexpr grpc::StatusCode kAdmitted = grpc::StatusCode::UNIMPLEMENTED;
  auto list_workers = [&](const std::string& token) {
    v1::ListWorkersResponse response;
    return v1::Autotuner::NewStub(Channel(server->port, token))
        ->ListWorkers(ContextWithTimeout(absl::Seconds(30)).get(), v1::ListWorkersRequest(),
                      &response)
        .error_code();
  };
  constexpr char kNewToken[] = "new-client-token-0123456789";

  // The old two-field form: refused, naming the file and line; the old tokens stay.
  WriteTestFile("tokens", absl::StrCat("client ", kNewToken, "\n"));
  const absl::Status bad =
      ReloadTokens(options.token_file, ClientCertificates::kVerified, *security->token_processor);
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.message(), HasSubstr(absl::StrCat("token_file (\"", options.token_file,
                                                    "\") line 1: has the old two-field form")));
  EXPECT_EQ(list_workers(kClientToken), kAdmitted);
  EXPECT_EQ(list_workers(kNewToken), grpc::StatusCode::UNAUTHENTICATED);

  WriteTestFile("tokens", absl::StrCat("client alice ", kNewToken, "\n"));
  const absl::Status reloaded =
      ReloadTokens(options.token_file, ClientCertificates::kVerified, *security->token_processor);
  ASSERT_TRUE(reloaded.ok()) << reloaded;
  EXPECT_EQ(security->token_processor->tokens()->tokens(), 1);
  EXPECT_EQ(list_workers(kNewToken), kAdmitted);
  EXPECT_EQ(list_workers(kClientToken), grpc::StatusCode::UNAUTHENTICATED);
}

// Real handshakes: the test client certificate (CN paratune-worker) bound to alice, or to no
// one. The server serves no method, so an admitted call is UNIMPLEMENTED.
TEST_F(ServerSecurityTest, AClientCertificateBoundInTheTokenFileNamesItsPrincipal) {
  constexpr char kBobToken[] = "bob-token-0123456789abc";
  ServerSecurityOptions options = MutualTlsWithTokens();
  options.token_file = WriteTestFile(
      "certificate-tokens", absl::StrCat("client alice cert:paratune-worker\nclient alice ",
                                         kClientToken, "\nclient bob ", kBobToken, "\n"));
  absl::StatusOr<ServerSecurity> security = LoadServerSecurity(options);
  ASSERT_TRUE(security.ok()) << security.status();
  GrpcServerOptions grpc_options;
  grpc_options.address = "127.0.0.1:0";
  grpc_options.credentials = security->credentials;
  absl::StatusOr<StartedGrpcServer> server = StartGrpcServer(std::move(grpc_options));
  ASSERT_TRUE(server.ok()) << server.status();
  auto list_workers = [&](const std::string& token) {
    v1::ListWorkersResponse response;
    return v1::Autotuner::NewStub(Channel(server->port, token))
        ->ListWorkers(ContextWithTimeout(absl::Seconds(30)).get(), v1::ListWorkersRequest(),
                      &response);
  };
  EXPECT_EQ(list_workers("").error_code(), grpc::StatusCode::UNIMPLEMENTED);
  EXPECT_EQ(list_workers(kClientToken).error_code(), grpc::StatusCode::UNIMPLEMENTED);
  const grpc::Status bob = list_workers(kBobToken);
  EXPECT_EQ(bob.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(bob.error_message(), HasSubstr("the client certificate names alice"));

  // Unbound: the certificate only admits the connection, and a call needs a token.
  WriteTestFile("certificate-tokens", absl::StrCat("client alice ", kClientToken, "\n"));
  ASSERT_TRUE(
      ReloadTokens(options.token_file, ClientCertificates::kVerified, *security->token_processor)
          .ok());
  const grpc::Status unbound = list_workers("");
  EXPECT_EQ(unbound.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(unbound.error_message(),
              HasSubstr("the client certificate (CN \"paratune-worker\")"));
  EXPECT_EQ(list_workers(kClientToken).error_code(), grpc::StatusCode::UNIMPLEMENTED);
}

}  // namespace
}  // namespace paratune
