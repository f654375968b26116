#include "common/port_file.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;

TEST(WritePortFileTest, WritesThePortAndANewline) {
  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/port";
  ASSERT_TRUE(WritePortFile("--port_file", path, 50051).ok());
  std::ifstream file(path);
  std::stringstream contents;
  contents << file.rdbuf();
  EXPECT_EQ(contents.str(), "50051\n");
}

TEST(WritePortFileTest, DoesNothingWithoutAPath) {
  EXPECT_TRUE(WritePortFile("--port_file", "", 50051).ok());
}

TEST(WritePortFileTest, NamesTheFlagWhenTheDirectoryIsMissing) {
  const absl::Status status = WritePortFile("--metrics_port_file", "/nonexistent/dir/port", 1);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(status.message()), HasSubstr("--metrics_port_file (\"/nonexistent"));
}

}  // namespace
}  // namespace paratune
