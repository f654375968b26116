#include "common/port_file.h"

#include "absl/strings/str_cat.h"
#include "common/small_file.h"

namespace paratune {

absl::Status WritePortFile(const std::string& flag, const std::string& path, int port) {
  if (path.empty()) return absl::OkStatus();
  const absl::Status written = WriteFileAtomically(path, absl::StrCat(port, "\n"));
  if (written.ok()) return written;
  return absl::UnavailableError(
      absl::StrCat("cannot write ", flag, " (\"", path, "\"): ", written.message()));
}

}  // namespace paratune
