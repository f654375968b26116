// What the CLI makes of the terminal it prints to: its width and whether to colour. The
// facts (the ioctl's answer, the environment) are read in main.cc and passed in, so that
// these decisions are tested without a terminal.
#ifndef PARATUNE_CLI_TERMINAL_H_
#define PARATUNE_CLI_TERMINAL_H_

#include <string>

#include "absl/strings/string_view.h"

namespace paratune {

// Width assumed when neither the terminal nor $COLUMNS tells it.
inline constexpr int kDefaultTerminalColumns = 80;

// The width to fit output to: the terminal's (ioctl TIOCGWINSZ, `ioctl_columns`; 0 when
// stdout is no terminal or the call failed), else $COLUMNS (`columns_variable`, null when
// unset) when it is a positive integer, else kDefaultTerminalColumns.
int TerminalColumns(int ioctl_columns, const char* columns_variable);

// --color: auto colours when stdout is a terminal, $NO_COLOR is unset or empty
// (https://no-color.org) and $TERM is not "dumb".
enum class ColorMode { kAuto, kAlways, kNever };

// Whether to colour output in `mode`; the variables are null when unset.
bool UseColor(ColorMode mode, bool stdout_is_terminal, const char* no_color_variable,
              const char* term_variable);

// The colours the CLI uses (ANSI SGR foreground colours).
enum class Color { kGreen, kYellow, kRed, kDim };

// `text` in `color` followed by a reset; `text` itself when `enabled` is false.
std::string Colored(absl::string_view text, Color color, bool enabled);

}  // namespace paratune

#endif  // PARATUNE_CLI_TERMINAL_H_
