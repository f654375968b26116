#include "common/command_line.h"

#include <cstdio>
#include <string>

#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace paratune {

std::vector<char*> ParseFlags(int argc, char** argv, absl::string_view usage,
                              absl::string_view flags_file, absl::string_view version) {
  absl::SetProgramUsageMessage(usage);
  absl::FlagsUsageConfig usage_config;
  usage_config.contains_help_flags = [file = std::string(flags_file)](absl::string_view path) {
    return absl::EndsWith(path, file);
  };
  usage_config.contains_helpshort_flags = usage_config.contains_help_flags;
  if (!version.empty()) {
    usage_config.version_string = [line = absl::StrCat(version, "\n")] { return line; };
  }
  absl::SetFlagsUsageConfig(usage_config);
  return absl::ParseCommandLine(argc, argv);
}

bool NoPositionalArguments(const std::vector<char*>& positional, absl::string_view program) {
  if (positional.size() <= 1) return true;
  std::fprintf(stderr, "%.*s takes no positional arguments (got \"%s\"); see --help\n",
               static_cast<int>(program.size()), program.data(), positional[1]);
  return false;
}

}  // namespace paratune
