#include "server/security/token_table.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <cstdint>
#include <map>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/bearer_token.h"
#include "common/small_file.h"

namespace paratune {
namespace {

// kMaxCredentials lines of the longest tokens, with room for comments.
constexpr int64_t kMaxTokenFileBytes = 1 << 20;

constexpr absl::string_view kLineForm =
    "each line must be ROLE NAME TOKEN or ROLE NAME cert:COMMON_NAME, e.g. \"client alice "
    "<token>\"";

// OK for a common name a token file may bind; INVALID_ARGUMENT saying what one may hold.
absl::Status CheckCommonName(absl::string_view common_name) {
  bool valid = !common_name.empty() && common_name.size() <= TokenTable::kMaxCommonNameBytes;
  for (const char c : common_name) {
    if (!absl::ascii_isgraph(static_cast<unsigned char>(c))) valid = false;
  }
  if (valid) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("the common name after ", TokenTable::kCertificatePrefix, " must have 1 to ",
                   TokenTable::kMaxCommonNameBytes, " printable ASCII characters, no spaces"));
}

}  // namespace

TokenTable::Digest TokenTable::DigestOf(absl::string_view token) {
  Digest digest;
  SHA256(reinterpret_cast<const unsigned char*>(token.data()), token.size(), digest.data());
  return digest;
}

absl::StatusOr<TokenTable> TokenTable::Parse(absl::string_view path, absl::string_view text,
                                             ClientCertificates client_certificates) {
  const std::string file = absl::StrCat("token_file (\"", path, "\")");
  TokenTable table;
  // The line each token and each common name was first seen on, to name it when it comes
  // again.
  std::map<Digest, int> token_lines;
  std::map<std::string, int> certificate_lines;
  // Each name's role and the line that gave it.
  std::map<std::string, std::pair<Role, int>> roles;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    auto error = [&](absl::string_view problem) {
      return absl::InvalidArgumentError(absl::StrCat(file, " line ", line_number, ": ", problem));
    };
    const std::vector<absl::string_view> fields =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    if (fields.size() == 2) {
      return error(absl::StrCat(
          "has the old two-field form ROLE TOKEN; tokens now name their principal: ", kLineForm));
    }
    if (fields.size() != 3) {
      return error(absl::StrCat("has ", fields.size(), " fields; ", kLineForm,
                                " (comments are lines of their own starting with '#')"));
    }
    const std::optional<Role> role = ParseRole(fields[0]);
    if (!role.has_value()) {
      return error("the first field is not a role; ROLE must be client, worker or admin");
    }
    if (absl::Status name = CheckPrincipalName(fields[1]); !name.ok()) {
      return error(absl::StrCat("the second field: ", name.message()));
    }
    absl::string_view credential = fields[2];
    const bool certificate = absl::ConsumePrefix(&credential, kCertificatePrefix);
    if (certificate) {
      if (absl::Status syntax = CheckCommonName(credential); !syntax.ok()) {
        return error(syntax.message());
      }
      if (client_certificates == ClientCertificates::kNotVerified) {
        return error(
            "binds a client certificate, but the server verifies none: cert: lines need "
            "tls_client_ca (mutual TLS)");
      }
    } else if (absl::Status syntax = CheckTokenSyntax(credential); !syntax.ok()) {
      return error(syntax.message());
    }
    const std::string name(fields[1]);
    if (auto [it, added] = roles.try_emplace(name, *role, line_number);
        !added && it->second.first != *role) {
      return error(absl::StrCat("gives the name of line ", it->second.second, " the role ",
                                RoleName(*role), " after ", RoleName(it->second.first),
                                "; a principal has one role"));
    }
    if (table.tokens_.size() + table.certificates_.size() == kMaxCredentials) {
      return error(absl::StrCat("more than ", kMaxCredentials, " credentials"));
    }
    if (certificate) {
      if (auto [it, added] = certificate_lines.emplace(credential, line_number); !added) {
        return error(absl::StrCat("the common name of line ", it->second,
                                  " again; each certificate appears once, with one principal"));
      }
      table.certificates_.emplace(credential, Principal{name, *role});
    } else {
      const Digest digest = DigestOf(credential);
      if (auto [it, added] = token_lines.emplace(digest, line_number); !added) {
        return error(absl::StrCat("the token of line ", it->second,
                                  " again; each token appears once, with one principal"));
      }
      table.tokens_.push_back({digest, Principal{name, *role}});
    }
  }
  if (roles.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(file, " holds no token or certificate; ", kLineForm));
  }
  table.principals_ = roles.size();
  return table;
}

absl::StatusOr<TokenTable> TokenTable::Load(const std::string& path,
                                            ClientCertificates client_certificates) {
  absl::StatusOr<std::string> text = ReadSmallFile(path, kMaxTokenFileBytes);
  if (!text.ok()) {
    return absl::Status(text.status().code(),
                        absl::StrCat("token_file: ", text.status().message()));
  }
  return Parse(path, *text, client_certificates);
}

std::optional<Principal> TokenTable::Find(absl::string_view token) const {
  // Digests have one length whatever the token's, and CRYPTO_memcmp takes the same time
  // wherever they differ; no early exit, so the match's position does not show either.
  const Digest digest = DigestOf(token);
  const Token* found = nullptr;
  for (const Token& entry : tokens_) {
    if (CRYPTO_memcmp(entry.digest.data(), digest.data(), digest.size()) == 0) found = &entry;
  }
  if (found == nullptr) return std::nullopt;
  return found->principal;
}

std::optional<Principal> TokenTable::FindCertificate(absl::string_view common_name) const {
  const auto it = certificates_.find(common_name);
  if (it == certificates_.end()) return std::nullopt;
  return it->second;
}

bool TokenTable::BindsCertificateOf(Role role) const {
  for (const auto& [common_name, principal] : certificates_) {
    if (principal.role == role) return true;
  }
  return false;
}

bool TokenTable::IsAdmin(absl::string_view name) const {
  const auto admin = [name](const Principal& principal) {
    return principal.role == Role::kAdmin && principal.name == name;
  };
  for (const Token& token : tokens_) {
    if (admin(token.principal)) return true;
  }
  for (const auto& [common_name, principal] : certificates_) {
    if (admin(principal)) return true;
  }
  return false;
}

}  // namespace paratune
