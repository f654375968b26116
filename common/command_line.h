// Command-line parsing shared by paratune's binaries: one place that decides what --help
// shows and how stray positional arguments are refused.
#ifndef PARATUNE_COMMON_COMMAND_LINE_H_
#define PARATUNE_COMMON_COMMAND_LINE_H_

#include <vector>

#include "absl/strings/string_view.h"

namespace paratune {

// Sets `usage` as the program's usage message, makes --help and --helpshort list the flags
// defined in the source file whose path ends with `flags_file` (e.g. "server/server_main.cc";
// Abseil's default lists files named after the binary, which Bazel's paths never are, so
// --help would print "No flags matched"), then parses argv with absl::ParseCommandLine.
// `version` is what --version prints and exits with (a "\n" is added); empty leaves
// Abseil's, which names the binary and its build mode only.
// Returns the positional arguments, argv[0] first. --help, --version and bad flags exit the
// process, as absl::ParseCommandLine does.
std::vector<char*> ParseFlags(int argc, char** argv, absl::string_view usage,
                              absl::string_view flags_file, absl::string_view version = "");

// For binaries that take flags only: true when `positional` (ParseFlags's result) holds
// nothing past argv[0]; otherwise prints "<program> takes no positional arguments" naming
// the first one to stderr and returns false.
bool NoPositionalArguments(const std::vector<char*>& positional, absl::string_view program);

}  // namespace paratune

#endif  // PARATUNE_COMMON_COMMAND_LINE_H_
