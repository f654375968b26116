#include "server/token_table.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <cstdint>
#include <map>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/bearer_token.h"
#include "common/small_file.h"

namespace paratune {
namespace {

// kMaxTokens lines of the longest tokens, with room for comments.
constexpr int64_t kMaxTokenFileBytes = 1 << 20;

constexpr absl::string_view kLineForm =
    "each line must be ROLE NAME TOKEN, e.g. \"client alice <token>\"";

}  // namespace

TokenTable::Digest TokenTable::DigestOf(absl::string_view token) {
  Digest digest;
  SHA256(reinterpret_cast<const unsigned char*>(token.data()), token.size(), digest.data());
  return digest;
}

absl::StatusOr<TokenTable> TokenTable::Parse(absl::string_view path, absl::string_view text) {
  const std::string file = absl::StrCat("token_file (\"", path, "\")");
  TokenTable table;
  // The line each token was first seen on, to name it when it comes again.
  std::map<Digest, int> first_line;
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
    if (absl::Status syntax = CheckTokenSyntax(fields[2]); !syntax.ok()) {
      return error(syntax.message());
    }
    const std::string name(fields[1]);
    if (auto [it, added] = roles.try_emplace(name, *role, line_number);
        !added && it->second.first != *role) {
      return error(absl::StrCat("gives the name of line ", it->second.second, " the role ",
                                RoleName(*role), " after ", RoleName(it->second.first),
                                "; a principal has one role"));
    }
    const Digest digest = DigestOf(fields[2]);
    if (auto [it, added] = first_line.emplace(digest, line_number); !added) {
      return error(absl::StrCat("the token of line ", it->second,
                                " again; each token appears once, with one principal"));
    }
    if (table.entries_.size() == kMaxTokens) {
      return error(absl::StrCat("more than ", kMaxTokens, " tokens"));
    }
    table.entries_.push_back({digest, Principal{name, *role}});
  }
  if (table.entries_.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(file, " holds no token; ", kLineForm));
  }
  return table;
}

absl::StatusOr<TokenTable> TokenTable::Load(const std::string& path) {
  absl::StatusOr<std::string> text = ReadSmallFile(path, kMaxTokenFileBytes);
  if (!text.ok()) {
    return absl::Status(text.status().code(),
                        absl::StrCat("token_file: ", text.status().message()));
  }
  return Parse(path, *text);
}

std::optional<Principal> TokenTable::Find(absl::string_view token) const {
  // Digests have one length whatever the token's, and CRYPTO_memcmp takes the same time
  // wherever they differ; no early exit, so the match's position does not show either.
  const Digest digest = DigestOf(token);
  const Entry* found = nullptr;
  for (const Entry& entry : entries_) {
    if (CRYPTO_memcmp(entry.digest.data(), digest.data(), digest.size()) == 0) found = &entry;
  }
  if (found == nullptr) return std::nullopt;
  return found->principal;
}

}  // namespace paratune
