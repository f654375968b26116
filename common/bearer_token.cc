#include "common/bearer_token.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/small_file.h"

namespace paratune {
namespace {

// A token file holds one token and a newline; anything larger is the wrong file.
constexpr int64_t kMaxTokenFileBytes = kMaxTokenLength + 64;

bool IsB64TokenCharacter(char c) {
  return absl::ascii_isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || c == '+' ||
         c == '/';
}

}  // namespace

absl::Status CheckTokenSyntax(absl::string_view token) {
  if (token.size() < kMinTokenLength || token.size() > kMaxTokenLength) {
    return absl::InvalidArgumentError(absl::StrCat("the token has ", token.size(),
                                                   " characters; it must have ", kMinTokenLength,
                                                   " to ", kMaxTokenLength));
  }
  size_t end = token.size();
  while (end > 0 && token[end - 1] == '=') --end;
  for (size_t i = 0; i < end; ++i) {
    if (!IsB64TokenCharacter(token[i])) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the token has a character that is not a letter, digit, - . _ ~ + / or trailing = "
          "(at position ",
          i + 1, ")"));
    }
  }
  if (end == 0) return absl::InvalidArgumentError("the token is all '=' padding");
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadTokenFile(absl::string_view option, const std::string& path) {
  const std::string where = absl::StrCat(option, " (\"", path, "\")");
  absl::StatusOr<std::string> contents = ReadSmallFile(path, kMaxTokenFileBytes);
  if (!contents.ok()) {
    return absl::Status(contents.status().code(),
                        absl::StrCat(option, ": ", contents.status().message()));
  }
  const absl::string_view token = absl::StripAsciiWhitespace(*contents);
  if (token.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, " is empty; it must hold the bearer token"));
  }
  if (std::any_of(token.begin(), token.end(), absl::ascii_isspace)) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, " holds more than one word; it must hold the bearer token alone, on one line"));
  }
  if (absl::Status syntax = CheckTokenSyntax(token); !syntax.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": ", syntax.message()));
  }
  return std::string(token);
}

}  // namespace paratune
