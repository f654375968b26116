#include "common/port_file.h"

#include <unistd.h>

#include <cstdio>

#include "absl/strings/str_cat.h"

namespace paratune {

absl::Status WritePortFile(const std::string& flag, const std::string& path, int port) {
  if (path.empty()) return absl::OkStatus();
  const std::string temporary = absl::StrCat(path, ".tmp.", getpid());
  FILE* file = std::fopen(temporary.c_str(), "w");
  if (file == nullptr) {
    return absl::UnavailableError(absl::StrCat("cannot create ", flag, " (\"", temporary, "\")"));
  }
  const bool written = std::fprintf(file, "%d\n", port) > 0;
  const bool closed = std::fclose(file) == 0;
  if (!written || !closed || std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::remove(temporary.c_str());
    return absl::UnavailableError(absl::StrCat("cannot write ", flag, " (\"", path, "\")"));
  }
  return absl::OkStatus();
}

}  // namespace paratune
