#include "common/small_file.h"

#include <string>

#include "common/test_file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;

TEST(ReadSmallFileTest, ReadsTheWholeFileUpToTheLimit) {
  const std::string path = WriteTestFile("exact", std::string(10, 'x'));
  absl::StatusOr<std::string> contents = ReadSmallFile(path, 10);
  ASSERT_TRUE(contents.ok()) << contents.status();
  EXPECT_EQ(*contents, std::string(10, 'x'));
}

TEST(ReadSmallFileTest, ReadsAnEmptyFile) {
  absl::StatusOr<std::string> contents = ReadSmallFile(WriteTestFile("empty", ""), 10);
  ASSERT_TRUE(contents.ok()) << contents.status();
  EXPECT_EQ(*contents, "");
}

TEST(ReadSmallFileTest, RefusesAFileOverTheLimit) {
  const std::string path = WriteTestFile("large", std::string(11, 'x'));
  absl::StatusOr<std::string> contents = ReadSmallFile(path, 10);
  EXPECT_EQ(contents.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(contents.status().message(), HasSubstr(path));
  EXPECT_THAT(contents.status().message(), HasSubstr("larger than 10 bytes"));
}

TEST(ReadSmallFileTest, MissingFileIsNotFoundWithThePathAndReason) {
  const std::string path = TestFilePath("no-such-file");
  absl::StatusOr<std::string> contents = ReadSmallFile(path, 10);
  EXPECT_EQ(contents.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(contents.status().message(), HasSubstr(path));
  EXPECT_THAT(contents.status().message(), HasSubstr("No such file or directory"));
}

TEST(ReadSmallFileTest, DirectoryCannotBeRead) {
  absl::StatusOr<std::string> contents = ReadSmallFile(TestFilePath(""), 10);
  EXPECT_FALSE(contents.ok());
  EXPECT_THAT(contents.status().message(), HasSubstr("Is a directory"));
}

TEST(WriteFileAtomicallyTest, ReplacesTheFileWhole) {
  const std::string path = WriteTestFile("replaced", "old contents");
  ASSERT_TRUE(WriteFileAtomically(path, "new").ok());
  EXPECT_EQ(*ReadSmallFile(path, 100), "new");
  ASSERT_TRUE(WriteFileAtomically(path, std::string("\0binary\xff", 8)).ok());
  EXPECT_EQ(*ReadSmallFile(path, 100), std::string("\0binary\xff", 8));
}

TEST(WriteFileAtomicallyTest, AMissingDirectoryIsNotFoundWithThePath) {
  const absl::Status status = WriteFileAtomically("/nonexistent-dir/file", "x");
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(status.message(), HasSubstr("/nonexistent-dir/file: cannot create"));
}

}  // namespace
}  // namespace paratune
