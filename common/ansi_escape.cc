#include "common/ansi_escape.h"

namespace paratune {

size_t AnsiEscapeLength(absl::string_view text, size_t i) {
  if (text[i] != '\033' || i + 1 >= text.size() || text[i + 1] != '[') return 0;
  size_t end = i + 2;
  while (end < text.size() && !(text[end] >= '@' && text[end] <= '~')) ++end;
  return end < text.size() ? end + 1 - i : text.size() - i;
}

std::string WithoutAnsiEscapes(absl::string_view text) {
  std::string plain;
  plain.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    if (const size_t escape = AnsiEscapeLength(text, i); escape > 0) {
      i += escape;
      continue;
    }
    plain.push_back(text[i]);
    ++i;
  }
  return plain;
}

}  // namespace paratune
