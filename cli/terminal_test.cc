#include "cli/terminal.h"

#include "gtest/gtest.h"

namespace paratune {
namespace {

TEST(TerminalColumnsTest, TheTerminalThenColumnsThenEighty) {
  EXPECT_EQ(TerminalColumns(132, "100"), 132);
  EXPECT_EQ(TerminalColumns(0, "100"), 100);
  EXPECT_EQ(TerminalColumns(0, nullptr), 80);
  EXPECT_EQ(TerminalColumns(0, "wide"), 80);
  EXPECT_EQ(TerminalColumns(0, "-5"), 80);
}

TEST(UseColorTest, AutoColoursATerminalUnlessNoColorOrADumbTerminal) {
  EXPECT_TRUE(UseColor(ColorMode::kAuto, true, nullptr, "xterm-256color"));
  EXPECT_FALSE(UseColor(ColorMode::kAuto, false, nullptr, "xterm-256color"));
  EXPECT_FALSE(UseColor(ColorMode::kAuto, true, "1", "xterm-256color"));
  // https://no-color.org: an empty NO_COLOR does not count.
  EXPECT_TRUE(UseColor(ColorMode::kAuto, true, "", "xterm"));
  EXPECT_FALSE(UseColor(ColorMode::kAuto, true, nullptr, "dumb"));
}

TEST(UseColorTest, AlwaysAndNeverOverrideEverything) {
  EXPECT_TRUE(UseColor(ColorMode::kAlways, false, "1", "dumb"));
  EXPECT_FALSE(UseColor(ColorMode::kNever, true, nullptr, "xterm"));
}

TEST(ColoredTest, WrapsInAnSgrSequenceOnlyWhenEnabled) {
  EXPECT_EQ(Colored("62% SAFE", Color::kGreen, true), "\033[32m62% SAFE\033[0m");
  EXPECT_EQ(Colored("OOM", Color::kRed, true), "\033[31mOOM\033[0m");
  EXPECT_EQ(Colored("62% SAFE", Color::kGreen, false), "62% SAFE");
}

}  // namespace
}  // namespace paratune
