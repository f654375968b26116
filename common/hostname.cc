#include "common/hostname.h"

#include <string.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"

namespace paratune {

absl::StatusOr<std::string> LocalHostname() {
  // HOST_NAME_MAX is 64 on Linux; a longer buffer keeps the terminating NUL in any case.
  char hostname[256] = {};
  if (gethostname(hostname, sizeof(hostname) - 1) != 0) {
    return absl::UnavailableError(absl::StrCat("gethostname: ", strerror(errno)));
  }
  if (hostname[0] == '\0') return absl::UnavailableError("gethostname returned an empty name");
  return std::string(hostname);
}

}  // namespace paratune
