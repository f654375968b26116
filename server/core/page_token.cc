#include "server/core/page_token.h"

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace paratune {
namespace {

// Versioned so the encoding can change without misreading old tokens.
constexpr absl::string_view kPrefix = "v1-after:";

absl::Status BadToken(absl::string_view token) {
  return absl::InvalidArgumentError(
      absl::StrCat("page_token (\"", absl::CHexEscape(token.substr(0, 64)),
                   "\") is not a token from a previous page of this list"));
}

}  // namespace

std::string EncodePageToken(int64_t position) {
  return absl::WebSafeBase64Escape(absl::StrCat(kPrefix, position));
}

absl::StatusOr<int64_t> DecodePageToken(absl::string_view token) {
  if (token.empty()) return 0;
  std::string decoded;
  if (token.size() > 256 || !absl::WebSafeBase64Unescape(token, &decoded) ||
      !absl::StartsWith(decoded, kPrefix)) {
    return BadToken(token);
  }
  int64_t position = 0;
  if (!absl::SimpleAtoi(absl::string_view(decoded).substr(kPrefix.size()), &position) ||
      position < 1) {
    return BadToken(token);
  }
  return position;
}

}  // namespace paratune
