// ANSI control sequences (ECMA-48 CSI: ESC '[', parameter and intermediate bytes, one final
// byte in '@'..'~'), which terminals read as colours and cursor moves and which take no column:
// the CLI's own coloured output (cli/text_width.h) and a framework's coloured log lines
// (worker/torchtitan_log.h) skip them alike.
#ifndef PARATUNE_COMMON_ANSI_ESCAPE_H_
#define PARATUNE_COMMON_ANSI_ESCAPE_H_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace paratune {

// The length of the control sequence starting at text[i], to its final byte or to the end of
// `text` when it is cut; 0 when none starts there. i < text.size().
size_t AnsiEscapeLength(absl::string_view text, size_t i);

// `text` without its control sequences.
std::string WithoutAnsiEscapes(absl::string_view text);

}  // namespace paratune

#endif  // PARATUNE_COMMON_ANSI_ESCAPE_H_
