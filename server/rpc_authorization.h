// Who may call which method of paratune-server (DESIGN.md §11), checked on every call before
// any service code runs:
//
//   grpc.health.v1.Health, server reflection   anyone, with or without a token
//   paratune.v1.Autotuner                      client and admin tokens
//   paratune.v1.WorkerService                  worker and admin tokens
//   any other method                           admin tokens
//
// Health and reflection stay open so that load balancers and probes, which carry no token,
// can ask; they reveal no search, worker or token. A token travels as the call metadata
// "authorization: Bearer TOKEN" (RFC 6750), over TLS only (server/server_security.h).
#ifndef PARATUNE_SERVER_RPC_AUTHORIZATION_H_
#define PARATUNE_SERVER_RPC_AUTHORIZATION_H_

#include <functional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "grpcpp/security/auth_metadata_processor.h"
#include "server/token_table.h"

namespace paratune {

// OK when a caller whose "authorization" metadata has the values `authorization` may call
// `method` ("/package.Service/Method"). UNAUTHENTICATED when the method needs a token and the
// call has none, more than one, one not of the form "Bearer TOKEN", or one `tokens` does not
// hold; PERMISSION_DENIED when the token's role may not call the method. Messages name the
// method and the role, never the token.
absl::Status AuthorizeCall(const TokenTable& tokens, absl::string_view method,
                           const std::vector<absl::string_view>& authorization);

// Runs AuthorizeCall on every call of a TLS server (install it with
// grpc::ServerCredentials::SetAuthMetadataProcessor). gRPC calls it before the call reaches
// any interceptor or service, and ends a refused call with its status: unlike a server
// interceptor, it can refuse a call before the handler runs. It removes the authorization
// metadata from the calls it admits, so that no service code sees, and could log, a token.
// Thread-safe.
class TokenAuthMetadataProcessor final : public grpc::AuthMetadataProcessor {
 public:
  // Called with the method and the code of every call refused, e.g. to count them (refused
  // calls never reach the server's interceptors); may be empty.
  using RefusalObserver = std::function<void(absl::string_view method, absl::StatusCode code)>;

  TokenAuthMetadataProcessor(TokenTable tokens, RefusalObserver on_refused)
      : tokens_(std::move(tokens)), on_refused_(std::move(on_refused)) {}

  // Hashing and comparing a few digests does not block: run on the call's own thread.
  bool IsBlocking() const override { return false; }

  grpc::Status Process(const InputMetadata& auth_metadata, grpc::AuthContext* context,
                       OutputMetadata* consumed_auth_metadata,
                       OutputMetadata* response_metadata) override;

 private:
  const TokenTable tokens_;
  const RefusalObserver on_refused_;
};

}  // namespace paratune

#endif  // PARATUNE_SERVER_RPC_AUTHORIZATION_H_
