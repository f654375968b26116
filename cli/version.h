// The version of paratune, and the line `paratune --version` prints.
#ifndef PARATUNE_CLI_VERSION_H_
#define PARATUNE_CLI_VERSION_H_

#include <string>

#include "absl/strings/string_view.h"

namespace paratune {

// The release the source is; raised by hand with a release.
inline constexpr char kVersion[] = "0.1.0";

// "paratune 0.1.0 (commit 69b826a1c2d3)"; "commit unknown" when `commit` is empty or
// "unknown" (a build outside a git checkout). `commit` as cli/build_stamp.h gives it.
std::string VersionLine(absl::string_view commit);

}  // namespace paratune

#endif  // PARATUNE_CLI_VERSION_H_
