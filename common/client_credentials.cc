#include "common/client_credentials.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/bearer_token.h"
#include "common/pem_files.h"
#include "common/status_macros.h"

namespace paratune {

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> LoadClientCredentials(
    const ClientCredentialsOptions& options) {
  if (options.tls_ca.empty()) {
    for (const auto& [option, path] :
         {std::pair<const char*, const std::string&>{"tls_cert", options.tls_cert},
          {"tls_key", options.tls_key},
          {"token_file", options.token_file}}) {
      if (!path.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat(option, " (\"", path,
                         "\") needs tls_ca, the CA that signed the server's certificate: a "
                         "certificate or token is only presented over TLS"));
      }
    }
    return grpc::InsecureChannelCredentials();
  }
  grpc::SslCredentialsOptions tls;
  PT_ASSIGN_OR_RETURN(tls.pem_root_certs, ReadCaCertificates("tls_ca", options.tls_ca));
  PT_ASSIGN_OR_RETURN(
      std::optional<CertificateKeyPair> own,
      ReadCertificateKeyPair("tls_cert", options.tls_cert, "tls_key", options.tls_key));
  if (own.has_value()) {
    tls.pem_cert_chain = std::move(own->certificate_chain);
    tls.pem_private_key = std::move(own->private_key);
  }
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::SslCredentials(tls);
  if (options.token_file.empty()) return credentials;
  PT_ASSIGN_OR_RETURN(const std::string token, ReadTokenFile("token_file", options.token_file));
  // AccessTokenCredentials sends "authorization: Bearer TOKEN", what the server checks
  // (server/security/rpc_authorization.h).
  return grpc::CompositeChannelCredentials(credentials, grpc::AccessTokenCredentials(token));
}

}  // namespace paratune
