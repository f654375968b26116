// How paratune-server protects its gRPC port (DESIGN.md §11): TLS with its certificate,
// optionally requiring client certificates signed by a CA (mutual TLS), and a token file whose
// bearer tokens and bound client certificates name principals with roles, checked on every
// call (server/security/rpc_authorization.h). Both can be reloaded while the server runs (SIGHUP),
// open connections going on. Tokens need TLS: a bearer token sent in the clear is anyone's who can
// read the network, and gRPC clients refuse to send one over plaintext anyway.
#ifndef PARATUNE_SERVER_SECURITY_SERVER_SECURITY_H_
#define PARATUNE_SERVER_SECURITY_SERVER_SECURITY_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "grpcpp/security/server_credentials.h"
#include "server/security/rpc_authorization.h"
#include "server/security/server_certificates.h"
#include "server/security/token_table.h"

namespace paratune {

// Paths, each named like the flag that sets it; all empty serves plaintext without tokens.
struct ServerSecurityOptions {
  // The server's certificate chain and private key (PEM); TLS when set. Both or neither. The
  // certificate must name every host clients dial (DNS names, IP addresses). Reloadable
  // (ServerCertificates::Reload), like tls_client_ca.
  std::string tls_cert;
  std::string tls_key;
  // A CA (PEM): every client must present a certificate it signed (mutual TLS). Needs TLS.
  std::string tls_client_ca;
  // The token file (server/security/token_table.h): every call but health checking and reflection
  // needs a principal, named by a bearer token or a bound client certificate, whose role may
  // make it. Needs TLS; binding certificates needs tls_client_ca. Reloadable (ReloadTokens).
  std::string token_file;
  // Told of every call the token check refuses (e.g. the binary's RPC metrics); may be empty.
  TokenAuthMetadataProcessor::RefusalObserver on_refused_call;
};

struct ServerSecurity {
  std::shared_ptr<grpc::ServerCredentials> credentials;
  // The certificates behind `credentials`, to Reload; null without TLS. They must outlive
  // every server using `credentials`.
  std::shared_ptr<ServerCertificates> certificates;
  bool tls = false;
  bool mutual_tls = false;
  // Bearer tokens and client certificates the token file binds; 0 without one.
  size_t tokens = 0;
  size_t bound_certificates = 0;
  // Whether the token file binds a certificate to a worker principal, whose workers may then
  // present it instead of a token.
  bool worker_certificates = false;
  // The principal check installed in `credentials`, for ReloadTokens; null without a token
  // file.
  std::shared_ptr<TokenAuthMetadataProcessor> token_processor;

  // TLS and a token file: what a server listening beyond loopback needs
  // (server/security/listen_address.h).
  bool protects_remote_access() const { return tls && tokens + bound_certificates > 0; }
};

// The credentials for the server's listening port. INVALID_ARGUMENT when tls_client_ca or
// token_file come without tls_cert and tls_key; the errors of ServerCertificates::Load and
// TokenTable::Load, which name the option, the file and, in a token file, the line (a
// certificate bound without tls_client_ca included).
absl::StatusOr<ServerSecurity> LoadServerSecurity(const ServerSecurityOptions& options);

// Reads `token_file` again and has `processor` check every call from now on against it.
// TokenTable::Load's errors, leaving the old table in force.
absl::Status ReloadTokens(const std::string& token_file, ClientCertificates client_certificates,
                          TokenAuthMetadataProcessor& processor);

// Reloads of the server's credentials and the principals in force, for the binary's metrics
// (server/security/credential_metrics.h).
struct CredentialStats {
  // Reloads of the token file and of the TLS files, by result.
  int64_t token_reloads = 0;
  int64_t token_reload_errors = 0;
  int64_t certificate_reloads = 0;
  int64_t certificate_reload_errors = 0;
  // Principals the token file in force names; 0 without one.
  int64_t principals = 0;
};

// The paratune-worker flags (names without dashes) a worker needs to reach a server secured
// so: tls_ca with TLS, tls_cert and tls_key with mutual TLS, token_file with tokens unless the
// token file binds a worker's certificate (its workers may present that instead).
std::vector<std::string> WorkerCredentialFlags(const ServerSecurity& security);

}  // namespace paratune

#endif  // PARATUNE_SERVER_SECURITY_SERVER_SECURITY_H_
