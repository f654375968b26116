#include "server/server_security.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/pem_files.h"
#include "common/status_macros.h"
#include "server/token_table.h"

namespace paratune {

absl::StatusOr<ServerSecurity> LoadServerSecurity(const ServerSecurityOptions& options) {
  PT_ASSIGN_OR_RETURN(
      std::optional<CertificateKeyPair> own,
      ReadCertificateKeyPair("tls_cert", options.tls_cert, "tls_key", options.tls_key));
  ServerSecurity security;
  if (!own.has_value()) {
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
  security.tls = true;
  security.mutual_tls = !options.tls_client_ca.empty();
  grpc::SslServerCredentialsOptions tls(
      security.mutual_tls ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
                          : GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  if (security.mutual_tls) {
    PT_ASSIGN_OR_RETURN(tls.pem_root_certs,
                        ReadCaCertificates("tls_client_ca", options.tls_client_ca));
  }
  tls.pem_key_cert_pairs.push_back(
      {std::move(own->private_key), std::move(own->certificate_chain)});
  security.credentials = grpc::SslServerCredentials(tls);
  if (!options.token_file.empty()) {
    PT_ASSIGN_OR_RETURN(TokenTable tokens, TokenTable::Load(options.token_file));
    security.tokens = tokens.size();
    security.token_processor =
        std::make_shared<TokenAuthMetadataProcessor>(std::move(tokens), options.on_refused_call);
    security.credentials->SetAuthMetadataProcessor(security.token_processor);
  }
  return security;
}

absl::StatusOr<size_t> ReloadTokens(const std::string& token_file,
                                    TokenAuthMetadataProcessor& processor) {
  PT_ASSIGN_OR_RETURN(TokenTable tokens, TokenTable::Load(token_file));
  const size_t count = tokens.size();
  processor.ReplaceTokens(std::move(tokens));
  return count;
}

std::vector<std::string> WorkerCredentialFlags(const ServerSecurity& security) {
  std::vector<std::string> flags;
  if (security.tls) flags.push_back("tls_ca");
  if (security.mutual_tls) {
    flags.push_back("tls_cert");
    flags.push_back("tls_key");
  }
  if (security.tokens > 0) flags.push_back("token_file");
  return flags;
}

}  // namespace paratune
