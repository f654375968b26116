// Small files read and written whole. Reading has a size limit: configuration, certificates,
// token and assignment files are read once, and a file far larger than any of them is a
// mistake (the wrong path) rather than something to load into memory. Writing is atomic:
// port files, probe results and NCCL ids are read by other processes while being written.
#ifndef PARATUNE_COMMON_SMALL_FILE_H_
#define PARATUNE_COMMON_SMALL_FILE_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace paratune {

// The contents of `path`. The errno's code (NOT_FOUND, PERMISSION_DENIED, ...) with the path
// and strerror when it cannot be opened or read; INVALID_ARGUMENT naming the path when it
// holds more than `max_bytes` bytes.
absl::StatusOr<std::string> ReadSmallFile(const std::string& path, int64_t max_bytes);

// Writes `contents` to a temporary file beside `path` and renames it over `path`, so that a
// reader sees the old file or all of the new one, never part. The errno's code with the path
// and strerror when it cannot; the temporary file is removed then.
absl::Status WriteFileAtomically(const std::string& path, absl::string_view contents);

}  // namespace paratune

#endif  // PARATUNE_COMMON_SMALL_FILE_H_
