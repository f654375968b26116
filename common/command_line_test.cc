#include "common/command_line.h"

#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/usage.h"
#include "gtest/gtest.h"

ABSL_FLAG(int, command_line_test_value, 0, "a flag for this test");

namespace paratune {
namespace {

// absl allows one usage message per process, so one test parses.
TEST(ParseFlagsTest, SetsFlagsAndUsageAndReturnsPositionals) {
  std::string program = "program", flag = "--command_line_test_value=7", word = "word";
  std::vector<char*> argv = {program.data(), flag.data(), word.data()};
  const std::vector<char*> positional = ParseFlags(static_cast<int>(argv.size()), argv.data(),
                                                   "test usage", "common/command_line_test.cc");
  EXPECT_EQ(absl::GetFlag(FLAGS_command_line_test_value), 7);
  EXPECT_EQ(absl::ProgramUsageMessage(), "test usage");
  ASSERT_EQ(positional.size(), 2u);
  EXPECT_EQ(std::string(positional[1]), "word");
}

TEST(NoPositionalArgumentsTest, AcceptsOnlyTheProgramName) {
  std::string program = "program", word = "stray";
  EXPECT_TRUE(NoPositionalArguments({program.data()}, "program"));
  EXPECT_FALSE(NoPositionalArguments({program.data(), word.data()}, "program"));
}

}  // namespace
}  // namespace paratune
