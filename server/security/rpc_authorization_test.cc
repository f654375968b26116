#include "server/security/rpc_authorization.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/autotuner_service.grpc.pb.h"
#include "proto/worker_service.grpc.pb.h"
#include "server/security/grpc_methods.h"

namespace paratune {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::Pair;
using ::testing::SizeIs;

constexpr char kClientToken[] = "client-token-0123456789";
constexpr char kWorkerToken[] = "worker-token-0123456789";
constexpr char kAdminToken[] = "admin-token-0123456789";
constexpr char kUnknownToken[] = "unknown-token-0123456789";

TokenTable Tokens() {
  return TokenTable::Parse(
             "tokens",
             absl::StrCat("client alice ", kClientToken, "\nworker pool ", kWorkerToken,
                          "\nadmin ops ", kAdminToken,
                          "\nclient alice cert:alice-laptop\nworker pool cert:node-1\n"),
             ClientCertificates::kVerified)
      .value();
}

std::string Bearer(absl::string_view token) { return absl::StrCat("Bearer ", token); }

absl::StatusCode Code(absl::string_view method, absl::string_view token) {
  const std::string header = Bearer(token);
  return AuthorizeCall(Tokens(), method, {{header}}).status().code();
}

std::vector<std::string> AutotunerMethods() {
  return MethodsOfService(v1::Autotuner::service_full_name());
}

std::vector<std::string> WorkerServiceMethods() {
  return MethodsOfService(v1::WorkerService::service_full_name());
}

TEST(AuthorizeCallTest, ClientAndAdminTokensMayCallEveryAutotunerMethod) {
  ASSERT_THAT(AutotunerMethods(), SizeIs(testing::Ge(8)));
  for (const std::string& method : AutotunerMethods()) {
    EXPECT_EQ(Code(method, kClientToken), absl::StatusCode::kOk) << method;
    EXPECT_EQ(Code(method, kAdminToken), absl::StatusCode::kOk) << method;
    EXPECT_EQ(Code(method, kWorkerToken), absl::StatusCode::kPermissionDenied) << method;
  }
}

TEST(AuthorizeCallTest, WorkerAndAdminTokensMayCallEveryWorkerServiceMethod) {
  ASSERT_THAT(WorkerServiceMethods(), SizeIs(testing::Ge(4)));
  for (const std::string& method : WorkerServiceMethods()) {
    EXPECT_EQ(Code(method, kWorkerToken), absl::StatusCode::kOk) << method;
    EXPECT_EQ(Code(method, kAdminToken), absl::StatusCode::kOk) << method;
    EXPECT_EQ(Code(method, kClientToken), absl::StatusCode::kPermissionDenied) << method;
  }
}

TEST(AuthorizeCallTest, OnlyAdminTokensMayCallOtherMethods) {
  for (const std::string method :
       {"/grpc.channelz.v1.Channelz/GetServers", "/paratune.v1.Autotuner", "", "/"}) {
    EXPECT_EQ(Code(method, kAdminToken), absl::StatusCode::kOk) << method;
    EXPECT_EQ(Code(method, kClientToken), absl::StatusCode::kPermissionDenied) << method;
    EXPECT_EQ(Code(method, kWorkerToken), absl::StatusCode::kPermissionDenied) << method;
    EXPECT_EQ(AuthorizeCall(Tokens(), method, {}).status().code(),
              absl::StatusCode::kUnauthenticated);
  }
}

TEST(AuthorizeCallTest, HealthAndReflectionAreOpen) {
  for (const std::string& method : StandardGrpcMethods()) {
    EXPECT_TRUE(AuthorizeCall(Tokens(), method, {}).ok()) << method;
    // Open means the token is not looked at, whatever it is.
    EXPECT_EQ(Code(method, kUnknownToken), absl::StatusCode::kOk) << method;
    EXPECT_EQ(Code(method, kWorkerToken), absl::StatusCode::kOk) << method;
  }
}

TEST(AuthorizeCallTest, EveryOtherMethodNeedsAToken) {
  std::vector<std::string> methods = AutotunerMethods();
  for (std::string& method : WorkerServiceMethods()) methods.push_back(method);
  for (const std::string& method : methods) {
    const absl::Status status = AuthorizeCall(Tokens(), method, {}).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kUnauthenticated) << method;
    EXPECT_THAT(status.message(), HasSubstr("authorization: Bearer TOKEN"));
  }
}

TEST(AuthorizeCallTest, AnUnknownTokenIsUnauthenticatedWithoutQuotingIt) {
  const std::string header = Bearer(kUnknownToken);
  const absl::Status status =
      AuthorizeCall(Tokens(), "/paratune.v1.Autotuner/CreateSearch", {{header}}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(status.message(), HasSubstr("not one this server accepts"));
  EXPECT_THAT(status.message(), Not(HasSubstr(kUnknownToken)));
}

TEST(AuthorizeCallTest, AWrongRoleIsPermissionDeniedNamingTheRoles) {
  const std::string header = Bearer(kWorkerToken);
  const absl::Status status =
      AuthorizeCall(Tokens(), "/paratune.v1.Autotuner/CreateSearch", {{header}}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(status.message(),
            "a worker token may not call /paratune.v1.Autotuner/CreateSearch; it needs a client "
            "or admin token");
  const std::string client = Bearer(kClientToken);
  EXPECT_EQ(AuthorizeCall(Tokens(), "/paratune.v1.WorkerService/RegisterWorker", {{client}})
                .status()
                .message(),
            "a client token may not call /paratune.v1.WorkerService/RegisterWorker; it needs a "
            "worker or admin token");
}

TEST(AuthorizeCallTest, TheSchemeMustBeBearerInAnyCase) {
  const std::string method = "/paratune.v1.Autotuner/ListWorkers";
  const std::string lower = absl::StrCat("bearer ", kClientToken);
  EXPECT_TRUE(AuthorizeCall(Tokens(), method, {{lower}}).ok());
  for (const std::string header : {absl::StrCat("Basic ", kClientToken), std::string(kClientToken),
                                   absl::StrCat("Bearer  ", kClientToken), std::string("Bearer")}) {
    const absl::Status status = AuthorizeCall(Tokens(), method, {{header}}).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kUnauthenticated) << header;
    EXPECT_THAT(status.message(), Not(HasSubstr(kClientToken)));
  }
}

TEST(AuthorizeCallTest, TwoTokensAreUnauthenticated) {
  const std::string client = Bearer(kClientToken);
  const std::string admin = Bearer(kAdminToken);
  const absl::Status status =
      AuthorizeCall(Tokens(), "/paratune.v1.Autotuner/ListWorkers", {{client, admin}}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(status.message(), HasSubstr("2 authorization metadata values"));
}

TEST(AuthorizeCallTest, AnAdmittedCallNamesItsPrincipal) {
  const std::string client = Bearer(kClientToken);
  const absl::StatusOr<Caller> caller =
      AuthorizeCall(Tokens(), "/paratune.v1.Autotuner/CreateSearch", {{client}});
  ASSERT_TRUE(caller.ok()) << caller.status();
  ASSERT_TRUE(caller->has_value());
  EXPECT_EQ((*caller)->name, "alice");
  EXPECT_EQ((*caller)->role, Role::kClient);
  // Open methods do not look at the token: no principal.
  const absl::StatusOr<Caller> health =
      AuthorizeCall(Tokens(), "/grpc.health.v1.Health/Check", {{client}});
  ASSERT_TRUE(health.ok());
  EXPECT_EQ(*health, std::nullopt);
}

// What a call over a connection with a client certificate of `common_name` presents, with
// `authorization` values.
CallCredentials WithCertificate(absl::string_view common_name,
                                std::vector<absl::string_view> authorization = {}) {
  return CallCredentials{std::move(authorization), common_name};
}

TEST(AuthorizeCallTest, ABoundCertificateNamesItsPrincipalWithoutAToken) {
  const absl::StatusOr<Caller> caller = AuthorizeCall(
      Tokens(), "/paratune.v1.Autotuner/CreateSearch", WithCertificate("alice-laptop"));
  ASSERT_TRUE(caller.ok()) << caller.status();
  ASSERT_TRUE(caller->has_value());
  EXPECT_EQ((*caller)->name, "alice");
  EXPECT_EQ((*caller)->role, Role::kClient);
  const absl::StatusOr<Caller> worker = AuthorizeCall(
      Tokens(), "/paratune.v1.WorkerService/RegisterWorker", WithCertificate("node-1"));
  ASSERT_TRUE(worker.ok()) << worker.status();
  EXPECT_EQ((*worker)->name, "pool");
}

TEST(AuthorizeCallTest, AnUnboundCertificateWithoutATokenIsUnauthenticatedNamingIt) {
  const absl::Status status =
      AuthorizeCall(Tokens(), "/paratune.v1.Autotuner/ListWorkers", WithCertificate("intruder"))
          .status();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(status.message(),
            "/paratune.v1.Autotuner/ListWorkers needs a principal: the client certificate (CN "
            "\"intruder\") is bound to none in the server's token file (ROLE NAME "
            "cert:COMMON_NAME), and the call has no bearer token (\"authorization: Bearer "
            "TOKEN\")");
}

TEST(AuthorizeCallTest, AnUnboundCertificateLeavesTheTokenToDecide) {
  const std::string admin = Bearer(kAdminToken);
  const absl::StatusOr<Caller> caller = AuthorizeCall(
      Tokens(), "/paratune.v1.Autotuner/ListWorkers", WithCertificate("shared-ci", {admin}));
  ASSERT_TRUE(caller.ok()) << caller.status();
  EXPECT_EQ((*caller)->name, "ops");
}

TEST(AuthorizeCallTest, ATokenAndABoundCertificateMustNameOnePrincipal) {
  const std::string method = "/paratune.v1.Autotuner/ListWorkers";
  const std::string client = Bearer(kClientToken);
  const absl::StatusOr<Caller> same =
      AuthorizeCall(Tokens(), method, WithCertificate("alice-laptop", {client}));
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_EQ((*same)->name, "alice");

  // An admin token on alice's connection is refused, not preferred.
  const std::string admin = Bearer(kAdminToken);
  const absl::Status other =
      AuthorizeCall(Tokens(), method, WithCertificate("alice-laptop", {admin})).status();
  EXPECT_EQ(other.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(other.message(),
            "/paratune.v1.Autotuner/ListWorkers: the bearer token names the principal ops but "
            "the client certificate names alice; send the credentials of one principal");

  // A bad token is refused whatever the certificate.
  const std::string unknown = Bearer(kUnknownToken);
  EXPECT_EQ(
      AuthorizeCall(Tokens(), method, WithCertificate("alice-laptop", {unknown})).status().code(),
      absl::StatusCode::kUnauthenticated);
}

TEST(AuthorizeCallTest, ACertificatesRoleIsCheckedLikeATokens) {
  const absl::Status status =
      AuthorizeCall(Tokens(), "/paratune.v1.Autotuner/CreateSearch", WithCertificate("node-1"))
          .status();
  EXPECT_EQ(status.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(status.message(),
            "a worker certificate may not call /paratune.v1.Autotuner/CreateSearch; it needs a "
            "client or admin certificate");
  // Open methods look at no credential.
  EXPECT_TRUE(
      AuthorizeCall(Tokens(), "/grpc.health.v1.Health/Check", WithCertificate("intruder")).ok());
}

grpc::string_ref Ref(const std::string& text) { return grpc::string_ref(text.data(), text.size()); }

TEST(TokenAuthMetadataProcessorTest, AdmitsAnAllowedCallAndLeavesItsTokenForCallerOf) {
  TokenAuthMetadataProcessor processor(Tokens(), nullptr);
  EXPECT_FALSE(processor.IsBlocking());
  const std::string path = "/paratune.v1.WorkerService/Heartbeat";
  const std::string header = Bearer(kWorkerToken);
  const std::string authority = "localhost";
  grpc::AuthMetadataProcessor::InputMetadata metadata = {{Ref(":path"), Ref(path)},
                                                         {Ref(":authority"), Ref(authority)},
                                                         {Ref("authorization"), Ref(header)}};
  grpc::AuthMetadataProcessor::OutputMetadata consumed;
  grpc::AuthMetadataProcessor::OutputMetadata response;
  const grpc::Status status = processor.Process(metadata, nullptr, &consumed, &response);
  EXPECT_TRUE(status.ok()) << status.error_message();
  EXPECT_THAT(consumed, IsEmpty());
  EXPECT_THAT(response, IsEmpty());
}

TEST(TokenAuthMetadataProcessorTest, RefusesWithTheCanonicalCode) {
  TokenAuthMetadataProcessor processor(Tokens(), nullptr);
  const std::string path = "/paratune.v1.Autotuner/CreateSearch";
  const std::string worker = Bearer(kWorkerToken);
  grpc::AuthMetadataProcessor::OutputMetadata consumed;
  grpc::AuthMetadataProcessor::OutputMetadata response;
  EXPECT_EQ(
      processor.Process({{Ref(":path"), Ref(path)}}, nullptr, &consumed, &response).error_code(),
      grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(processor
                .Process({{Ref(":path"), Ref(path)}, {Ref("authorization"), Ref(worker)}}, nullptr,
                         &consumed, &response)
                .error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
}

TEST(TokenAuthMetadataProcessorTest, TellsTheObserverOfEveryRefusal) {
  std::vector<std::pair<std::string, absl::StatusCode>> refused;
  TokenAuthMetadataProcessor processor(Tokens(),
                                       [&refused](absl::string_view method, absl::StatusCode code) {
                                         refused.emplace_back(method, code);
                                       });
  const std::string create = "/paratune.v1.Autotuner/CreateSearch";
  const std::string health = "/grpc.health.v1.Health/Check";
  const std::string client = Bearer(kClientToken);
  const std::string worker = Bearer(kWorkerToken);
  grpc::AuthMetadataProcessor::OutputMetadata consumed;
  grpc::AuthMetadataProcessor::OutputMetadata response;
  processor.Process({{Ref(":path"), Ref(create)}}, nullptr, &consumed, &response);
  processor.Process({{Ref(":path"), Ref(create)}, {Ref("authorization"), Ref(worker)}}, nullptr,
                    &consumed, &response);
  processor.Process({{Ref(":path"), Ref(create)}, {Ref("authorization"), Ref(client)}}, nullptr,
                    &consumed, &response);
  processor.Process({{Ref(":path"), Ref(health)}}, nullptr, &consumed, &response);
  EXPECT_THAT(refused, ElementsAre(Pair(create, absl::StatusCode::kUnauthenticated),
                                   Pair(create, absl::StatusCode::kPermissionDenied)));
}

TEST(TokenAuthMetadataProcessorTest, ReplacedTokensApplyToTheNextCall) {
  TokenAuthMetadataProcessor processor(Tokens(), nullptr);
  const std::string path = "/paratune.v1.Autotuner/ListWorkers";
  const std::string client = Bearer(kClientToken);
  const std::string unknown = Bearer(kUnknownToken);
  grpc::AuthMetadataProcessor::OutputMetadata consumed;
  grpc::AuthMetadataProcessor::OutputMetadata response;
  auto code = [&](const std::string& header) {
    return processor
        .Process({{Ref(":path"), Ref(path)}, {Ref("authorization"), Ref(header)}}, nullptr,
                 &consumed, &response)
        .error_code();
  };
  EXPECT_EQ(code(client), grpc::StatusCode::OK);
  EXPECT_EQ(code(unknown), grpc::StatusCode::UNAUTHENTICATED);
  processor.ReplaceTokens(TokenTable::Parse("tokens",
                                            absl::StrCat("client carol ", kUnknownToken, "\n"),
                                            ClientCertificates::kNotVerified)
                              .value());
  EXPECT_EQ(code(client), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(code(unknown), grpc::StatusCode::OK);
}

TEST(TokenAuthMetadataProcessorTest, ACallWithoutAPathNeedsAnAdminToken) {
  TokenAuthMetadataProcessor processor(Tokens(), nullptr);
  const std::string client = Bearer(kClientToken);
  const std::string admin = Bearer(kAdminToken);
  grpc::AuthMetadataProcessor::OutputMetadata consumed;
  grpc::AuthMetadataProcessor::OutputMetadata response;
  EXPECT_EQ(processor.Process({{Ref("authorization"), Ref(client)}}, nullptr, &consumed, &response)
                .error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_TRUE(
      processor.Process({{Ref("authorization"), Ref(admin)}}, nullptr, &consumed, &response).ok());
}

// The AuthContext of a connection whose client certificate has the subject common name
// `common_name`, as gRPC's TLS fills it in (x509_common_name).
class CertificateAuthContext final : public grpc::AuthContext {
 public:
  explicit CertificateAuthContext(std::string common_name) : common_name_(std::move(common_name)) {}

  bool IsPeerAuthenticated() const override { return true; }
  std::vector<grpc::string_ref> GetPeerIdentity() const override { return {Ref(common_name_)}; }
  std::string GetPeerIdentityPropertyName() const override { return "x509_common_name"; }
  std::vector<grpc::string_ref> FindPropertyValues(const std::string& name) const override {
    if (name == "x509_common_name") return {Ref(common_name_)};
    return {};
  }
  grpc::AuthPropertyIterator begin() const override { return NoProperties(); }
  grpc::AuthPropertyIterator end() const override { return NoProperties(); }
  void AddProperty(const std::string&, const grpc::string_ref&) override {}
  bool SetPeerIdentityPropertyName(const std::string&) override { return false; }

 private:
  struct NoProperties : grpc::AuthPropertyIterator {};
  const std::string common_name_;
};

TEST(TokenAuthMetadataProcessorTest, TakesTheCertificateFromTheConnection) {
  TokenAuthMetadataProcessor processor(Tokens(), nullptr);
  const std::string path = "/paratune.v1.WorkerService/Heartbeat";
  grpc::AuthMetadataProcessor::OutputMetadata consumed;
  grpc::AuthMetadataProcessor::OutputMetadata response;
  CertificateAuthContext bound("node-1");
  EXPECT_TRUE(processor.Process({{Ref(":path"), Ref(path)}}, &bound, &consumed, &response).ok());
  CertificateAuthContext unbound("intruder");
  const grpc::Status status =
      processor.Process({{Ref(":path"), Ref(path)}}, &unbound, &consumed, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(status.error_message(), HasSubstr("CN \"intruder\""));
}

}  // namespace
}  // namespace paratune
