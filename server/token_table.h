// The server's bearer tokens and the principal each names (server/principal.h, DESIGN.md
// §11), read from its token file (--token_file). The file is text, one token per line:
//
//   # comment lines start with '#'; blank lines are skipped
//   ROLE NAME TOKEN
//
// ROLE is client (the Autotuner API: searches, estimates, plans), worker (the WorkerService
// API) or admin (both); NAME is the principal (CheckPrincipalName), recorded as the creator of
// its searches and the registrant of its workers; TOKEN is a b64token of 16 to 1024
// characters (common/bearer_token.h), e.g. `openssl rand -hex 32`, and appears once in the
// file. A name may have several tokens, all of one role, which lets a token be replaced
// without a gap: add the new one, reload (SIGHUP), move the callers over, remove the old one,
// reload. The old two-field form `ROLE TOKEN` is refused, naming the line.
#ifndef PARATUNE_SERVER_TOKEN_TABLE_H_
#define PARATUNE_SERVER_TOKEN_TABLE_H_

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/principal.h"

namespace paratune {

// Immutable, so thread-safe. Holds SHA-256 digests of the tokens, not the tokens.
class TokenTable {
 public:
  // Most tokens in a file.
  static constexpr size_t kMaxTokens = 1000;

  // Parses a token file's text; `path` names it in messages. INVALID_ARGUMENT
  // "token_file (\"PATH\") line N: ..." for a line that is not ROLE NAME TOKEN (the old
  // ROLE TOKEN form included), an unknown role, a malformed name or token, a token already on
  // an earlier line or a name given another role there, and for a file with no token or more
  // than kMaxTokens. Messages never quote a token, nor a role or name field (either could be a
  // token written in the wrong place).
  static absl::StatusOr<TokenTable> Parse(absl::string_view path, absl::string_view text);

  // Reads `path` (at most 1 MiB) and parses it. ReadSmallFile's errors, prefixed
  // "token_file: "; Parse's.
  static absl::StatusOr<TokenTable> Load(const std::string& path);

  // The principal of `token`; nullopt when the table does not hold it. Takes the same time for
  // every token of a given length, known or not, whatever prefix it shares with a known one:
  // it compares digests in constant time and always compares them all.
  std::optional<Principal> Find(absl::string_view token) const;

  size_t size() const { return entries_.size(); }

 private:
  using Digest = std::array<unsigned char, 32>;
  struct Entry {
    Digest digest;
    Principal principal;
  };

  static Digest DigestOf(absl::string_view token);

  std::vector<Entry> entries_;
};

}  // namespace paratune

#endif  // PARATUNE_SERVER_TOKEN_TABLE_H_
