#include "cli/text_width.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/ansi_escape.h"

namespace paratune {
namespace {

bool IsContinuationByte(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

}  // namespace

size_t VisibleWidth(absl::string_view text) {
  size_t width = 0;
  for (size_t i = 0; i < text.size();) {
    if (const size_t escape = AnsiEscapeLength(text, i); escape > 0) {
      i += escape;
      continue;
    }
    if (!IsContinuationByte(text[i])) ++width;
    ++i;
  }
  return width;
}

std::string CutToWidth(absl::string_view text, size_t width) {
  if (VisibleWidth(text) <= width) return std::string(text);
  const size_t dots = width < 4 ? width : 3;
  // Keep width - dots code points, never splitting one.
  size_t kept = 0;
  size_t end = 0;
  while (end < text.size()) {
    if (!IsContinuationByte(text[end])) {
      if (kept == width - dots) break;
      ++kept;
    }
    ++end;
  }
  return absl::StrCat(text.substr(0, end), std::string(dots, '.'));
}

std::string WrapToWidth(absl::string_view text, size_t width, size_t indent) {
  // A line must hold at least one character past the indent.
  if (indent >= width) indent = 0;
  std::string out;
  std::string line;
  size_t line_width = 0;  // past the indent
  for (absl::string_view word : absl::StrSplit(text, ' ', absl::SkipEmpty())) {
    size_t limit = out.empty() ? width : width - indent;
    if (line_width > 0 && line_width + 1 + VisibleWidth(word) > limit) {
      absl::StrAppend(&out, line, "\n");
      line = std::string(indent, ' ');
      line_width = 0;
      limit = width - indent;
    }
    if (line_width > 0) {
      line += ' ';
      ++line_width;
    }
    const std::string piece = line_width == 0 ? CutToWidth(word, limit) : std::string(word);
    line += piece;
    line_width += VisibleWidth(piece);
  }
  absl::StrAppend(&out, line, "\n");
  return out;
}

}  // namespace paratune
