// The server's credentials and the principal each names (server/core/principal.h, DESIGN.md §11),
// read from its token file (--token_file). The file is text, one credential per line:
//
//   # comment lines start with '#'; blank lines are skipped
//   ROLE NAME TOKEN
//   ROLE NAME cert:COMMON_NAME
//
// ROLE is client (the Autotuner API: searches, estimates, plans), worker (the WorkerService
// API) or admin (both); NAME is the principal (CheckPrincipalName), recorded as the creator of
// its searches and the registrant of its workers. TOKEN is a bearer token, a b64token of 16 to
// 1024 characters (common/bearer_token.h), e.g. `openssl rand -hex 32`. cert:COMMON_NAME binds
// the client certificates whose subject common name (CN) is COMMON_NAME (1 to 64 printable
// ASCII characters, no spaces): a caller presenting one, verified against the server's client
// CA, is that principal without a token. The CN, not a subjectAltName, because a certificate
// has one subject CN but may list many SANs: one certificate names one principal, with no rule
// to pick among them (Kubernetes and etcd name client-certificate users by CN alike).
//
// Each token and each common name appears once in the file. A name may have several
// credentials, all of one role, which lets a token or certificate be replaced without a gap:
// add the new one, reload (SIGHUP), move the callers over, remove the old one, reload. The old
// two-field form `ROLE TOKEN` is refused, naming the line.
#ifndef PARATUNE_SERVER_SECURITY_TOKEN_TABLE_H_
#define PARATUNE_SERVER_SECURITY_TOKEN_TABLE_H_

#include <array>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/core/principal.h"

namespace paratune {

// Whether the server verifies client certificates (mutual TLS). Without it no caller presents
// one, so a file that binds certificates is refused rather than left to refuse every call.
enum class ClientCertificates { kNotVerified, kVerified };

// Immutable, so thread-safe. Holds SHA-256 digests of the tokens, not the tokens.
class TokenTable {
 public:
  // Most credentials (tokens and certificates together) in a file.
  static constexpr size_t kMaxCredentials = 1000;
  // What starts a third field that binds a certificate; ':' is not a token character.
  static constexpr absl::string_view kCertificatePrefix = "cert:";
  // RFC 5280's upper bound on a subject common name.
  static constexpr size_t kMaxCommonNameBytes = 64;

  // Parses a token file's text; `path` names it in messages. INVALID_ARGUMENT
  // "token_file (\"PATH\") line N: ..." for a line that is not ROLE NAME TOKEN or
  // ROLE NAME cert:COMMON_NAME (the old ROLE TOKEN form included), an unknown role, a malformed
  // name, token or common name, a token or common name already on an earlier line, a name
  // given another role there, a certificate when `client_certificates` is kNotVerified, and
  // for a file with no credential or more than kMaxCredentials. Messages never quote a token,
  // nor a role, name or common name field (any could be a token written in the wrong place).
  static absl::StatusOr<TokenTable> Parse(absl::string_view path, absl::string_view text,
                                          ClientCertificates client_certificates);

  // Reads `path` (at most 1 MiB) and parses it. ReadSmallFile's errors, prefixed
  // "token_file: "; Parse's.
  static absl::StatusOr<TokenTable> Load(const std::string& path,
                                         ClientCertificates client_certificates);

  // The principal of `token`; nullopt when the table does not hold it. Takes the same time for
  // every token of a given length, known or not, whatever prefix it shares with a known one:
  // it compares digests in constant time and always compares them all.
  std::optional<Principal> Find(absl::string_view token) const;

  // The principal bound to client certificates whose subject common name is `common_name`;
  // nullopt when none is. (Common names are not secrets: an ordinary lookup.)
  std::optional<Principal> FindCertificate(absl::string_view common_name) const;

  // Whether a certificate is bound to a principal of `role`.
  bool BindsCertificateOf(Role role) const;

  size_t tokens() const { return tokens_.size(); }
  size_t certificates() const { return certificates_.size(); }
  // Distinct principal names.
  size_t principals() const { return principals_; }
  // Whether a token or certificate of the file makes `name` an admin.
  bool IsAdmin(absl::string_view name) const;

 private:
  using Digest = std::array<unsigned char, 32>;
  struct Token {
    Digest digest;
    Principal principal;
  };

  static Digest DigestOf(absl::string_view token);

  std::vector<Token> tokens_;
  // By common name.
  std::map<std::string, Principal, std::less<>> certificates_;
  size_t principals_ = 0;
};

}  // namespace paratune

#endif  // PARATUNE_SERVER_SECURITY_TOKEN_TABLE_H_
