// Text measured and fitted in terminal columns: what a table or a redrawn live view needs so
// that no line wraps. A column is one UTF-8 code point; ANSI colour sequences ("\033[...m")
// take none.
#ifndef PARATUNE_CLI_TEXT_WIDTH_H_
#define PARATUNE_CLI_TEXT_WIDTH_H_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace paratune {

// Columns `text` takes on a terminal (one line; no tabs).
size_t VisibleWidth(absl::string_view text);

// `text` when it fits in `width` columns; else its start ending in "..." (or as many dots as
// fit when width < 4), `width` columns in all. For text without colour sequences.
std::string CutToWidth(absl::string_view text, size_t width);

// `text` broken at spaces into lines of at most `width` columns, each ending in '\n'; lines
// after the first start with `indent` spaces. A word longer than a line is cut (CutToWidth).
std::string WrapToWidth(absl::string_view text, size_t width, size_t indent);

}  // namespace paratune

#endif  // PARATUNE_CLI_TEXT_WIDTH_H_
