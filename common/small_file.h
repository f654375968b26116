// Reading a small file whole, with a size limit: configuration, certificates and token files
// are read once at start-up, and a file far larger than any of them is a mistake (the wrong
// path) rather than something to load into memory.
#ifndef PARATUNE_COMMON_SMALL_FILE_H_
#define PARATUNE_COMMON_SMALL_FILE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace paratune {

// The contents of `path`. The errno's code (NOT_FOUND, PERMISSION_DENIED, ...) with the path
// and strerror when it cannot be opened or read; INVALID_ARGUMENT naming the path when it
// holds more than `max_bytes` bytes.
absl::StatusOr<std::string> ReadSmallFile(const std::string& path, int64_t max_bytes);

}  // namespace paratune

#endif  // PARATUNE_COMMON_SMALL_FILE_H_
