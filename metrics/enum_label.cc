#include "metrics/enum_label.h"

#include "absl/strings/ascii.h"
#include "absl/strings/strip.h"

namespace paratune::metrics {

std::string EnumLabel(absl::string_view enum_name, absl::string_view prefix) {
  absl::ConsumePrefix(&enum_name, prefix);
  return absl::AsciiStrToLower(enum_name);
}

}  // namespace paratune::metrics
