#include "worker/cuda/kernel_module_version.h"

#include <fstream>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"

namespace paratune {

std::string KernelModuleVersionOf(absl::string_view first_line) {
  const std::vector<absl::string_view> words =
      absl::StrSplit(first_line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
  for (absl::string_view word : words) {
    bool dot = false;
    bool version = absl::ascii_isdigit(static_cast<unsigned char>(word.front()));
    for (char c : word) {
      dot = dot || c == '.';
      version = version && (c == '.' || absl::ascii_isdigit(static_cast<unsigned char>(c)));
    }
    if (version && dot) return std::string(word);
  }
  return "";
}

std::string KernelModuleVersion() {
  std::ifstream file("/proc/driver/nvidia/version");
  std::string line;
  if (!std::getline(file, line)) return "";
  return KernelModuleVersionOf(line);
}

}  // namespace paratune
