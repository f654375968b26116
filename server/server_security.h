// How paratune-server protects its gRPC port (DESIGN.md §11): TLS with its certificate,
// optionally requiring client certificates signed by a CA (mutual TLS), and bearer tokens
// with roles checked on every call (server/rpc_authorization.h). Tokens need TLS: a bearer
// token sent in the clear is anyone's who can read the network, and gRPC clients refuse to
// send one over plaintext anyway.
#ifndef PARATUNE_SERVER_SERVER_SECURITY_H_
#define PARATUNE_SERVER_SERVER_SECURITY_H_

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "grpcpp/security/server_credentials.h"
#include "server/rpc_authorization.h"

namespace paratune {

// Paths, each named like the flag that sets it; all empty serves plaintext without tokens.
struct ServerSecurityOptions {
  // The server's certificate chain and private key (PEM); TLS when set. Both or neither. The
  // certificate must name every host clients dial (DNS names, IP addresses).
  std::string tls_cert;
  std::string tls_key;
  // A CA (PEM): every client must present a certificate it signed (mutual TLS). Needs TLS.
  std::string tls_client_ca;
  // The token file (server/token_table.h): every call but health checking and reflection
  // needs a bearer token whose role may make it. Needs TLS.
  std::string token_file;
  // Told of every call the token check refuses (e.g. the binary's RPC metrics); may be empty.
  TokenAuthMetadataProcessor::RefusalObserver on_refused_call;
};

struct ServerSecurity {
  std::shared_ptr<grpc::ServerCredentials> credentials;
  bool tls = false;
  bool mutual_tls = false;
  // Tokens in the token file; 0 without one.
  size_t tokens = 0;
  // The token check installed in `credentials`, for ReloadTokens; null without a token file.
  std::shared_ptr<TokenAuthMetadataProcessor> token_processor;

  // TLS and tokens: what a server listening beyond loopback needs (server/listen_address.h).
  bool protects_remote_access() const { return tls && tokens > 0; }
};

// The credentials for the server's listening port. INVALID_ARGUMENT when tls_client_ca or
// token_file come without tls_cert and tls_key; the errors of ReadCertificateKeyPair,
// ReadCaCertificates and TokenTable::Load, which name the option, the file and, in a token
// file, the line.
absl::StatusOr<ServerSecurity> LoadServerSecurity(const ServerSecurityOptions& options);

// Reads `token_file` again and has `processor` check every call from now on against it;
// returns the number of tokens. TokenTable::Load's errors, leaving the old tokens in force.
absl::StatusOr<size_t> ReloadTokens(const std::string& token_file,
                                    TokenAuthMetadataProcessor& processor);

// The paratune-worker flags (names without dashes) a worker needs to reach a server secured
// so: tls_ca with TLS, tls_cert and tls_key with mutual TLS, token_file with tokens.
std::vector<std::string> WorkerCredentialFlags(const ServerSecurity& security);

}  // namespace paratune

#endif  // PARATUNE_SERVER_SERVER_SECURITY_H_
