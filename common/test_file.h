// Files that tests write into their own temporary folder (Bazel's TEST_TMPDIR): inputs such
// as token files and configs for the code under test.
#ifndef PARATUNE_COMMON_TEST_FILE_H_
#define PARATUNE_COMMON_TEST_FILE_H_

#include <string>

namespace paratune {

// TEST_TMPDIR/name (/tmp/name outside Bazel).
std::string TestFilePath(const std::string& name);

// Writes `contents` to TestFilePath(name), replacing it, and returns that path. Fails the
// current test (a gtest failure) when the file cannot be written.
std::string WriteTestFile(const std::string& name, const std::string& contents);

}  // namespace paratune

#endif  // PARATUNE_COMMON_TEST_FILE_H_
