#include "cli/terminal.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace paratune {

int TerminalColumns(int ioctl_columns, const char* columns_variable) {
  if (ioctl_columns > 0) return ioctl_columns;
  int columns = 0;
  if (columns_variable != nullptr && absl::SimpleAtoi(columns_variable, &columns) && columns > 0) {
    return columns;
  }
  return kDefaultTerminalColumns;
}

bool UseColor(ColorMode mode, bool stdout_is_terminal, const char* no_color_variable,
              const char* term_variable) {
  switch (mode) {
    case ColorMode::kAlways:
      return true;
    case ColorMode::kNever:
      return false;
    case ColorMode::kAuto:
      break;
  }
  const bool no_color = no_color_variable != nullptr && no_color_variable[0] != '\0';
  const bool dumb = term_variable != nullptr && absl::string_view(term_variable) == "dumb";
  return stdout_is_terminal && !no_color && !dumb;
}

std::string Colored(absl::string_view text, Color color, bool enabled) {
  if (!enabled) return std::string(text);
  const char* code = "";
  switch (color) {
    case Color::kGreen:
      code = "32";
      break;
    case Color::kYellow:
      code = "33";
      break;
    case Color::kRed:
      code = "31";
      break;
    case Color::kDim:
      code = "2";
      break;
  }
  return absl::StrCat("\033[", code, "m", text, "\033[0m");
}

}  // namespace paratune
