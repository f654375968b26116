#include "server/rpc_authorization.h"

#include <algorithm>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"
#include "proto/autotuner_service.grpc.pb.h"
#include "proto/worker_service.grpc.pb.h"
#include "server/grpc_methods.h"
#include "server/grpc_status.h"

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

// The roles that may call `method`, for a refusal's message.
std::string RolesFor(absl::string_view method) {
  for (Role role : {Role::kClient, Role::kWorker}) {
    if (MayCall(role, method)) return absl::StrCat("a ", RoleName(role), " or admin token");
  }
  return "an admin token";
}

absl::string_view ToStringView(grpc::string_ref text) {
  return absl::string_view(text.data(), text.size());
}

grpc::string_ref ToStringRef(absl::string_view text) {
  return grpc::string_ref(text.data(), text.size());
}

}  // namespace

absl::StatusOr<Principal> IdentifyCaller(const TokenTable& tokens, absl::string_view method,
                                         const std::vector<absl::string_view>& authorization) {
  if (authorization.empty()) {
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
  return *std::move(principal);
}

absl::StatusOr<Caller> AuthorizeCall(const TokenTable& tokens, absl::string_view method,
                                     const std::vector<absl::string_view>& authorization) {
  if (IsOpen(method)) return std::nullopt;
  PT_ASSIGN_OR_RETURN(Principal principal, IdentifyCaller(tokens, method, authorization));
  if (!MayCall(principal.role, method)) {
    return absl::PermissionDeniedError(absl::StrCat("a ", RoleName(principal.role),
                                                    " token may not call ", method, "; it needs ",
                                                    RolesFor(method)));
  }
  return principal;
}

absl::StatusOr<Caller> CallerOf(const TokenAuthMetadataProcessor* tokens,
                                grpc::ServerContextBase& context) {
  if (tokens == nullptr) return std::nullopt;
  std::vector<absl::string_view> authorization;
  const auto [first, last] = context.client_metadata().equal_range(ToStringRef(kAuthorizationKey));
  for (auto it = first; it != last; ++it) authorization.push_back(ToStringView(it->second));
  PT_ASSIGN_OR_RETURN(Principal principal,
                      IdentifyCaller(*tokens->tokens(), "the call", authorization));
  return principal;
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
                                                 grpc::AuthContext* /*context*/,
                                                 OutputMetadata* /*consumed_auth_metadata*/,
                                                 OutputMetadata* /*response_metadata*/) {
  absl::string_view method;
  if (const auto path = auth_metadata.find(ToStringRef(kPathKey)); path != auth_metadata.end()) {
    method = ToStringView(path->second);
  }
  std::vector<absl::string_view> authorization;
  const auto [first, last] = auth_metadata.equal_range(ToStringRef(kAuthorizationKey));
  for (auto it = first; it != last; ++it) {
    authorization.push_back(ToStringView(it->second));
  }
  const absl::StatusOr<Caller> caller = AuthorizeCall(*tokens(), method, authorization);
  if (!caller.ok()) {
    if (on_refused_) on_refused_(method, caller.status().code());
    return ToGrpcStatus(caller.status());
  }
  return grpc::Status::OK;
}

}  // namespace paratune
