#include "common/test_file.h"

#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace paratune {

std::string TestFilePath(const std::string& name) {
  const char* directory = std::getenv("TEST_TMPDIR");
  return absl::StrCat(directory != nullptr ? directory : "/tmp", "/", name);
}

std::string WriteTestFile(const std::string& name, const std::string& contents) {
  const std::string path = TestFilePath(name);
  FILE* file = std::fopen(path.c_str(), "wb");
  const bool written =
      file != nullptr && std::fwrite(contents.data(), 1, contents.size(), file) == contents.size();
  const bool closed = file != nullptr && std::fclose(file) == 0;
  EXPECT_TRUE(written && closed) << "cannot write " << path;
  return path;
}

}  // namespace paratune
