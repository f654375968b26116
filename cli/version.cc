#include "cli/version.h"

#include "absl/strings/str_cat.h"

namespace paratune {

std::string VersionLine(absl::string_view commit) {
  const bool known = !commit.empty() && commit != "unknown";
  return absl::StrCat("paratune ", kVersion, " (commit ", known ? commit : "unknown", ")");
}

}  // namespace paratune
