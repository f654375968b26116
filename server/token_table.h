// The server's bearer tokens and the role each grants (DESIGN.md §11), read from its token
// file (--token_file). The file is text, one token per line:
//
//   # comment lines start with '#'; blank lines are skipped
//   ROLE TOKEN
//
// ROLE is client (the Autotuner API: searches, estimates, plans), worker (the WorkerService
// API) or admin (both); TOKEN is a b64token of 16 to 1024 characters (common/bearer_token.h),
// e.g. `openssl rand -hex 32`, and appears once in the file. Several tokens may share a role
// (one per team or per worker pool), which also lets a token be replaced without a gap: add
// the new one, restart, move the callers over, remove the old one, restart.
#ifndef PARATUNE_SERVER_TOKEN_TABLE_H_
#define PARATUNE_SERVER_TOKEN_TABLE_H_

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace paratune {

enum class Role { kClient, kWorker, kAdmin };

// "client", "worker", "admin".
absl::string_view RoleName(Role role);

// Immutable, so thread-safe. Holds SHA-256 digests of the tokens, not the tokens.
class TokenTable {
 public:
  // Most tokens in a file.
  static constexpr size_t kMaxTokens = 1000;

  // Parses a token file's text; `path` names it in messages. INVALID_ARGUMENT
  // "token_file (\"PATH\") line N: ..." for a line that is not ROLE TOKEN, an unknown role, a
  // malformed token or one already on an earlier line, and for a file with no token or more
  // than kMaxTokens. Messages never quote a token, nor a role field (which could be a token
  // written in the wrong order).
  static absl::StatusOr<TokenTable> Parse(absl::string_view path, absl::string_view text);

  // Reads `path` (at most 1 MiB) and parses it. ReadSmallFile's errors, prefixed
  // "token_file: "; Parse's.
  static absl::StatusOr<TokenTable> Load(const std::string& path);

  // The role of `token`; nullopt when the table does not hold it. Takes the same time for
  // every token of a given length, known or not, whatever prefix it shares with a known one:
  // it compares digests in constant time and always compares them all.
  std::optional<Role> Find(absl::string_view token) const;

  size_t size() const { return entries_.size(); }

 private:
  using Digest = std::array<unsigned char, 32>;
  struct Entry {
    Digest digest;
    Role role;
  };

  static Digest DigestOf(absl::string_view token);

  std::vector<Entry> entries_;
};

}  // namespace paratune

#endif  // PARATUNE_SERVER_TOKEN_TABLE_H_
