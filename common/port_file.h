// Port files: how a process started with port 0 tells a test or script which port it bound.
#ifndef PARATUNE_COMMON_PORT_FILE_H_
#define PARATUNE_COMMON_PORT_FILE_H_

#include <string>

#include "absl/status/status.h"

namespace paratune {

// Writes "<port>\n" to `path` atomically: a temporary file in the same directory, then
// rename(2), so a reader polling for the file reads all of it or nothing. Does nothing when
// `path` is empty (the flag was not given). UNAVAILABLE naming `flag` and the path when it
// cannot be written.
absl::Status WritePortFile(const std::string& flag, const std::string& path, int port);

}  // namespace paratune

#endif  // PARATUNE_COMMON_PORT_FILE_H_
