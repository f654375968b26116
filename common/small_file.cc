#include "common/small_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"

namespace paratune {

absl::StatusOr<std::string> ReadSmallFile(const std::string& path, int64_t max_bytes) {
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (file == nullptr) {
    return absl::ErrnoToStatus(errno, absl::StrCat(path, ": cannot open"));
  }
  // One byte more than allowed tells a file at the limit from a larger one.
  std::string contents(static_cast<size_t>(max_bytes) + 1, '\0');
  const size_t read = std::fread(contents.data(), 1, contents.size(), file.get());
  if (std::ferror(file.get())) {
    return absl::ErrnoToStatus(errno, absl::StrCat(path, ": cannot read"));
  }
  if (static_cast<int64_t>(read) > max_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": larger than ", max_bytes, " bytes, too large for this file"));
  }
  contents.resize(read);
  return contents;
}

absl::Status WriteFileAtomically(const std::string& path, absl::string_view contents) {
  // The process id keeps two writers of one path from sharing a temporary file.
  const std::string temporary = absl::StrCat(path, ".tmp.", getpid());
  const auto failed = [&](const char* what) {
    const int error = errno;
    std::remove(temporary.c_str());
    return absl::ErrnoToStatus(error, absl::StrCat(path, ": cannot ", what));
  };
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(temporary.c_str(), "wb"), &std::fclose);
  if (file == nullptr) return failed("create a temporary file");
  if (std::fwrite(contents.data(), 1, contents.size(), file.get()) != contents.size()) {
    return failed("write");
  }
  if (std::fclose(file.release()) != 0) return failed("write");
  if (std::rename(temporary.c_str(), path.c_str()) != 0) return failed("replace");
  return absl::OkStatus();
}

}  // namespace paratune
