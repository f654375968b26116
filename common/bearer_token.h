// Bearer tokens (DESIGN.md §11), the secrets that name a caller's role: what a well-formed
// one is, and how a client reads its own from a file (so that it never appears on a command
// line, where `ps` would show it). The server's table of tokens is server/security/token_table.h.
#ifndef PARATUNE_COMMON_BEARER_TOKEN_H_
#define PARATUNE_COMMON_BEARER_TOKEN_H_

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace paratune {

// A token shorter than this is guessable; `openssl rand -hex 32` makes one of 64.
inline constexpr size_t kMinTokenLength = 16;
inline constexpr size_t kMaxTokenLength = 1024;

// OK for a b64token of RFC 6750 §2.1 (letters, digits and - . _ ~ + /, then any '=' padding),
// the characters an HTTP/2 header carries unchanged, of kMinTokenLength to kMaxTokenLength
// characters. INVALID_ARGUMENT saying what is wrong; the message never quotes the token.
absl::Status CheckTokenSyntax(absl::string_view token);

// The token a client's token file holds: its one line, without surrounding whitespace.
// ReadSmallFile's errors; INVALID_ARGUMENT for an empty file, more than one word or line, or
// a token CheckTokenSyntax refuses. Messages start with `option` ("token_file") and the path
// and never quote the file's contents.
absl::StatusOr<std::string> ReadTokenFile(absl::string_view option, const std::string& path);

}  // namespace paratune

#endif  // PARATUNE_COMMON_BEARER_TOKEN_H_
