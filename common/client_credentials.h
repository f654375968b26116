// How a paratune client (the CLI, the worker daemon) authenticates to paratune-server
// (DESIGN.md §11): TLS that verifies the server's certificate, a client certificate when the
// server requires one (mutual TLS), and a bearer token sent with every call.
#ifndef PARATUNE_COMMON_CLIENT_CREDENTIALS_H_
#define PARATUNE_COMMON_CLIENT_CREDENTIALS_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/security/credentials.h"

namespace paratune {

// Paths; each option is named like the flag that sets it.
struct ClientCredentialsOptions {
  // PEM file of the CA that signed the server's certificate; TLS is on when it is set. The
  // server's certificate must name the host the client dials (DNS name or IP address).
  std::string tls_ca;
  // This client's certificate chain and private key (PEM), for a server that requires client
  // certificates (mutual TLS). Both or neither; they need tls_ca.
  std::string tls_cert;
  std::string tls_key;
  // A file holding this client's bearer token alone (common/bearer_token.h), sent as
  // "authorization: Bearer TOKEN" with every call. Needs tls_ca.
  std::string token_file;
};

// Credentials for grpc::CreateChannel: plaintext when every option is empty; otherwise TLS,
// with the client certificate and the token when given. INVALID_ARGUMENT when tls_cert,
// tls_key or token_file come without tls_ca (gRPC never sends a token over plaintext, and a
// client certificate needs TLS to be presented); the errors of ReadCaCertificates,
// ReadCertificateKeyPair and ReadTokenFile, which name the option and file.
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> LoadClientCredentials(
    const ClientCredentialsOptions& options);

}  // namespace paratune

#endif  // PARATUNE_COMMON_CLIENT_CREDENTIALS_H_
