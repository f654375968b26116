#include "fuzz/fuzz_input.h"

#include <stdlib.h>

#include <fstream>

#include "absl/strings/str_cat.h"

namespace paratune {

const std::string& FuzzScratchDirectory() {
  static const std::string* const directory = [] {
    const char* base = std::getenv("TEST_TMPDIR");
    if (base == nullptr) base = std::getenv("TMPDIR");
    if (base == nullptr) base = "/tmp";
    std::string pattern = absl::StrCat(base, "/paratune_fuzz_XXXXXX");
    if (mkdtemp(pattern.data()) == nullptr) {
      std::perror("mkdtemp");
      std::abort();
    }
    return new std::string(pattern);
  }();
  return *directory;
}

std::string WriteFuzzFile(absl::string_view name, absl::string_view contents) {
  std::string path = absl::StrCat(FuzzScratchDirectory(), "/", name);
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  file.close();
  if (!file) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    std::abort();
  }
  return path;
}

}  // namespace paratune
