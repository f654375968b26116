#include "server/security/rpc_authorization.h"

#include <grpc/grpc_security_constants.h>

#include <algorithm>
#include <optional>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/grpc_status.h"
#include "common/status_macros.h"
#include "proto/autotuner_service.grpc.pb.h"
#include "proto/worker_service.grpc.pb.h"
#include "server/security/grpc_methods.h"

namespace paratune {
namespace {

constexpr absl::string_view kAuthorizationKey = "authorization";
constexpr absl::string_view kPathKey = ":path";
// RFC 7235: the scheme is case-insensitive.
constexpr absl::string_view kBearerPrefix = "bearer ";

bool IsOpen(absl::string_view method) {
  static const auto* const open = new std::vector<std::string>(StandardGrpcMethods());
  return std::find(open->begin(), open->end(), method) != open->end();
}

// "paratune.v1.Autotuner" of "/paratune.v1.Autotuner/CreateSearch"; empty for a name that is
// not "/SERVICE/METHOD".
absl::string_view ServiceOf(absl::string_view method) {
  if (!absl::ConsumePrefix(&method, "/")) return "";
  const size_t slash = method.find('/');
  if (slash == absl::string_view::npos) return "";
  return method.substr(0, slash);
}

bool MayCall(Role role, absl::string_view method) {
  if (role == Role::kAdmin) return true;
  const absl::string_view service = ServiceOf(method);
  if (role == Role::kClient) return service == v1::Autotuner::service_full_name();
  return service == v1::WorkerService::service_full_name();
}

// The roles that may call `method`, for a refusal's message: "a client or admin token".
std::string RolesFor(absl::string_view method, absl::string_view credential) {
  for (Role role : {Role::kClient, Role::kWorker}) {
    if (MayCall(role, method)) {
      return absl::StrCat("a ", RoleName(role), " or admin ", credential);
    }
  }
  return absl::StrCat("an admin ", credential);
}

absl::string_view ToStringView(grpc::string_ref text) {
  return absl::string_view(text.data(), text.size());
}

grpc::string_ref ToStringRef(absl::string_view text) {
  return grpc::string_ref(text.data(), text.size());
}

// The subject common name of the client certificate of the connection of `context`; empty
// without one. It points into `context`.
absl::string_view CertificateCommonName(const grpc::AuthContext& context) {
  const std::vector<grpc::string_ref> names =
      context.FindPropertyValues(GRPC_X509_CN_PROPERTY_NAME);
  return names.size() == 1 ? ToStringView(names.front()) : absl::string_view();
}

// A caller's principal and the kind of credential that named it ("token", "certificate").
struct Identified {
  Principal principal;
  absl::string_view credential;
};

constexpr absl::string_view kToken = "token";
constexpr absl::string_view kCertificate = "certificate";

absl::StatusOr<Identified> IdentifyCaller(const TokenTable& tokens, absl::string_view method,
                                          const CallCredentials& credentials) {
  const absl::string_view common_name = credentials.certificate_common_name;
  const std::optional<Principal> certified =
      common_name.empty() ? std::nullopt : tokens.FindCertificate(common_name);
  const std::vector<absl::string_view>& authorization = credentials.authorization;
  if (authorization.empty()) {
    if (certified.has_value()) return Identified{*certified, kCertificate};
    if (!common_name.empty()) {
      return absl::UnauthenticatedError(absl::StrCat(
          method, " needs a principal: the client certificate (CN \"",
          absl::CHexEscape(common_name),
          "\") is bound to none in the server's token file (ROLE NAME cert:COMMON_NAME), and "
          "the call has no bearer token (\"authorization: Bearer TOKEN\")"));
    }
    return absl::UnauthenticatedError(
        absl::StrCat(method,
                     " needs a bearer token: send the metadata \"authorization: Bearer TOKEN\" "
                     "(paratune and paratune-worker: --token_file)"));
  }
  if (authorization.size() > 1) {
    return absl::UnauthenticatedError(
        absl::StrCat(method, ": the call has ", authorization.size(),
                     " authorization metadata values; send one bearer token"));
  }
  absl::string_view token = authorization.front();
  if (!absl::StartsWithIgnoreCase(token, kBearerPrefix)) {
    return absl::UnauthenticatedError(
        absl::StrCat(method, ": the authorization metadata is not of the form \"Bearer TOKEN\""));
  }
  token.remove_prefix(kBearerPrefix.size());
  std::optional<Principal> principal = tokens.Find(token);
  if (!principal.has_value()) {
    return absl::UnauthenticatedError(
        absl::StrCat(method, ": the bearer token is not one this server accepts"));
  }
  if (certified.has_value() && certified->name != principal->name) {
    return absl::UnauthenticatedError(
        absl::StrCat(method, ": the bearer token names the principal ", principal->name,
                     " but the client certificate names ", certified->name,
                     "; send the credentials of one principal"));
  }
  return Identified{*std::move(principal), kToken};
}

}  // namespace

absl::StatusOr<Caller> AuthorizeCall(const TokenTable& tokens, absl::string_view method,
                                     const CallCredentials& credentials) {
  if (IsOpen(method)) return std::nullopt;
  PT_ASSIGN_OR_RETURN(const Identified caller, IdentifyCaller(tokens, method, credentials));
  if (!MayCall(caller.principal.role, method)) {
    return absl::PermissionDeniedError(
        absl::StrCat("a ", RoleName(caller.principal.role), " ", caller.credential,
                     " may not call ", method, "; it needs ", RolesFor(method, caller.credential)));
  }
  return caller.principal;
}

absl::StatusOr<Caller> CallerOf(const TokenAuthMetadataProcessor* tokens,
                                grpc::ServerContextBase& context) {
  if (tokens == nullptr) return std::nullopt;
  CallCredentials credentials;
  const auto [first, last] = context.client_metadata().equal_range(ToStringRef(kAuthorizationKey));
  for (auto it = first; it != last; ++it) {
    credentials.authorization.push_back(ToStringView(it->second));
  }
  // Held while the common name, which points into it, is in use.
  const std::shared_ptr<const grpc::AuthContext> auth_context = context.auth_context();
  if (auth_context != nullptr) {
    credentials.certificate_common_name = CertificateCommonName(*auth_context);
  }
  PT_ASSIGN_OR_RETURN(const Identified caller,
                      IdentifyCaller(*tokens->tokens(), "the call", credentials));
  return caller.principal;
}

std::shared_ptr<const TokenTable> TokenAuthMetadataProcessor::tokens() const {
  absl::MutexLock lock(&mu_);
  return tokens_;
}

void TokenAuthMetadataProcessor::ReplaceTokens(TokenTable tokens) {
  auto replacement = std::make_shared<const TokenTable>(std::move(tokens));
  absl::MutexLock lock(&mu_);
  tokens_ = std::move(replacement);
}

grpc::Status TokenAuthMetadataProcessor::Process(const InputMetadata& auth_metadata,
                                                 grpc::AuthContext* context,
                                                 OutputMetadata* /*consumed_auth_metadata*/,
                                                 OutputMetadata* /*response_metadata*/) {
  CallCredentials credentials;
  absl::string_view method;
  if (const auto path = auth_metadata.find(ToStringRef(kPathKey)); path != auth_metadata.end()) {
    method = ToStringView(path->second);
  }
  const auto [first, last] = auth_metadata.equal_range(ToStringRef(kAuthorizationKey));
  for (auto it = first; it != last; ++it) {
    credentials.authorization.push_back(ToStringView(it->second));
  }
  if (context != nullptr) credentials.certificate_common_name = CertificateCommonName(*context);
  const absl::StatusOr<Caller> caller = AuthorizeCall(*tokens(), method, credentials);
  if (!caller.ok()) {
    if (on_refused_) on_refused_(method, caller.status().code());
    return ToGrpcStatus(caller.status());
  }
  return grpc::Status::OK;
}

}  // namespace paratune
