// Who may call which method of paratune-server (DESIGN.md §11), checked on every call before
// any service code runs:
//
//   grpc.health.v1.Health, server reflection   anyone, with or without credentials
//   paratune.v1.Autotuner                      client and admin principals
//   paratune.v1.WorkerService                  worker and admin principals
//   any other method                           admin principals
//
// Health and reflection stay open so that load balancers and probes, which carry no token,
// can ask; they reveal no search, worker or token. A caller names its principal
// (server/core/principal.h) with a bearer token, the call metadata "authorization: Bearer TOKEN"
// (RFC 6750), or with a client certificate the token file binds (mutual TLS), over TLS only
// (server/security/server_security.h). A call with both must have both name the same principal: a
// bound certificate pins who may use the connection, and a token of someone else on it is
// refused rather than silently preferred. The services look the caller's principal up again
// per call (CallerOf); which searches and workers it may reach is theirs to check.
#ifndef PARATUNE_SERVER_SECURITY_RPC_AUTHORIZATION_H_
#define PARATUNE_SERVER_SECURITY_RPC_AUTHORIZATION_H_

#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/security/auth_metadata_processor.h"
#include "grpcpp/server_context.h"
#include "server/core/principal.h"
#include "server/security/token_table.h"

namespace paratune {

// What a call presents to say who it is.
struct CallCredentials {
  // The values of its "authorization" metadata.
  std::vector<absl::string_view> authorization;
  // The subject common name of the client certificate its connection presented, which TLS
  // verified against the server's client CA; empty without one.
  absl::string_view certificate_common_name;
};

// The principal of a caller presenting `credentials` when it may call `method`
// ("/package.Service/Method"); nullopt for an open method, whatever it presents. The principal
// is the bearer token's, or without a token the client certificate's. UNAUTHENTICATED when
// the method needs a principal and the call names none (no token, and no certificate or one
// `tokens` binds to no principal, which the message quotes by common name), when it has more
// than one authorization value, one not of the form "Bearer TOKEN", or a token `tokens` does
// not hold, and when its token and its bound certificate name different principals;
// PERMISSION_DENIED when the principal's role may not call the method. Messages name the
// method, the role and the kind of credential, never the token.
absl::StatusOr<Caller> AuthorizeCall(const TokenTable& tokens, absl::string_view method,
                                     const CallCredentials& credentials);

class TokenAuthMetadataProcessor;

// The principal of the call of `context`, from its bearer token and its connection's client
// certificate, looked up in the current table of `tokens`; nullopt when `tokens` is null (a
// server without a token file). UNAUTHENTICATED as AuthorizeCall, e.g. for a token removed by
// a reload after the call was admitted: never a principal-less caller on a server with a
// token file. (The token comes from the call's metadata, not from its AuthContext: gRPC
// shares that between the calls of one connection, which may carry different tokens; the
// certificate is the connection's, so its common name is read there.)
absl::StatusOr<Caller> CallerOf(const TokenAuthMetadataProcessor* tokens,
                                grpc::ServerContextBase& context);

// Runs AuthorizeCall on every call of a TLS server (install it with
// grpc::ServerCredentials::SetAuthMetadataProcessor). gRPC calls it before the call reaches
// any interceptor or service, and ends a refused call with its status: unlike a server
// interceptor, it can refuse a call before the handler runs. It leaves the authorization
// metadata in the calls it admits, for CallerOf; service code must never log it. Its table
// can be replaced while it serves (ReplaceTokens); connections stay open. Thread-safe.
class TokenAuthMetadataProcessor final : public grpc::AuthMetadataProcessor {
 public:
  // Called with the method and the code of every call refused, e.g. to count them (refused
  // calls never reach the server's interceptors); may be empty.
  using RefusalObserver = std::function<void(absl::string_view method, absl::StatusCode code)>;

  TokenAuthMetadataProcessor(TokenTable tokens, RefusalObserver on_refused)
      : tokens_(std::make_shared<const TokenTable>(std::move(tokens))),
        on_refused_(std::move(on_refused)) {}

  // Checks every call from now on against `tokens`.
  void ReplaceTokens(TokenTable tokens) ABSL_LOCKS_EXCLUDED(mu_);
  // The tokens now in force.
  std::shared_ptr<const TokenTable> tokens() const ABSL_LOCKS_EXCLUDED(mu_);

  // Hashing and comparing a few digests does not block: run on the call's own thread.
  bool IsBlocking() const override { return false; }

  grpc::Status Process(const InputMetadata& auth_metadata, grpc::AuthContext* context,
                       OutputMetadata* consumed_auth_metadata,
                       OutputMetadata* response_metadata) override;

 private:
  mutable absl::Mutex mu_;
  std::shared_ptr<const TokenTable> tokens_ ABSL_GUARDED_BY(mu_);
  const RefusalObserver on_refused_;
};

}  // namespace paratune

#endif  // PARATUNE_SERVER_SECURITY_RPC_AUTHORIZATION_H_
