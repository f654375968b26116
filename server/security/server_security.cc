#include "server/security/server_security.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/security/token_table.h"

namespace paratune {

absl::StatusOr<ServerSecurity> LoadServerSecurity(const ServerSecurityOptions& options) {
  ServerSecurity security;
  if (options.tls_cert.empty() && options.tls_key.empty()) {
    if (!options.tls_client_ca.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("tls_client_ca (\"", options.tls_client_ca,
                       "\") needs tls_cert and tls_key: client certificates are part of TLS"));
    }
    if (!options.token_file.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "token_file (\"", options.token_file,
          "\") needs tls_cert and tls_key: bearer tokens must not cross the network in the "
          "clear"));
    }
    security.credentials = grpc::InsecureServerCredentials();
    return security;
  }
  PT_ASSIGN_OR_RETURN(
      security.certificates,
      ServerCertificates::Load({options.tls_cert, options.tls_key, options.tls_client_ca}));
  security.tls = true;
  security.mutual_tls = security.certificates->verifies_clients();
  security.credentials = security.certificates->Credentials();
  if (!options.token_file.empty()) {
    PT_ASSIGN_OR_RETURN(TokenTable tokens,
                        TokenTable::Load(options.token_file,
                                         security.mutual_tls ? ClientCertificates::kVerified
                                                             : ClientCertificates::kNotVerified));
    security.tokens = tokens.tokens();
    security.bound_certificates = tokens.certificates();
    security.worker_certificates = tokens.BindsCertificateOf(Role::kWorker);
    security.token_processor =
        std::make_shared<TokenAuthMetadataProcessor>(std::move(tokens), options.on_refused_call);
    security.credentials->SetAuthMetadataProcessor(security.token_processor);
  }
  return security;
}

absl::Status ReloadTokens(const std::string& token_file, ClientCertificates client_certificates,
                          TokenAuthMetadataProcessor& processor) {
  PT_ASSIGN_OR_RETURN(TokenTable tokens, TokenTable::Load(token_file, client_certificates));
  processor.ReplaceTokens(std::move(tokens));
  return absl::OkStatus();
}

std::vector<std::string> WorkerCredentialFlags(const ServerSecurity& security) {
  std::vector<std::string> flags;
  if (security.tls) flags.push_back("tls_ca");
  if (security.mutual_tls) {
    flags.push_back("tls_cert");
    flags.push_back("tls_key");
  }
  if (security.tokens > 0 && !security.worker_certificates) flags.push_back("token_file");
  return flags;
}

}  // namespace paratune
