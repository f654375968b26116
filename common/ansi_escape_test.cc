#include "common/ansi_escape.h"

#include "gtest/gtest.h"

namespace paratune {
namespace {

TEST(AnsiEscapeTest, ASequenceRunsToItsFinalByte) {
  EXPECT_EQ(AnsiEscapeLength("\033[31mred", 0), 5u);
  EXPECT_EQ(AnsiEscapeLength("\033[1;32mgreen", 0), 7u);
  EXPECT_EQ(AnsiEscapeLength("ab\033[0m", 2), 4u);
  EXPECT_EQ(AnsiEscapeLength("\033[2K", 0), 4u);  // erase line: a final byte, not a colour
  EXPECT_EQ(AnsiEscapeLength("\033[@", 0), 3u);   // '@' is the first final byte
}

TEST(AnsiEscapeTest, NoSequenceStartsElsewhere) {
  EXPECT_EQ(AnsiEscapeLength("plain", 0), 0u);
  EXPECT_EQ(AnsiEscapeLength("\033", 0), 0u);       // ESC alone
  EXPECT_EQ(AnsiEscapeLength("\033(B", 0), 0u);     // not a CSI
  EXPECT_EQ(AnsiEscapeLength("x\033[31m", 0), 0u);  // it starts at 1
}

TEST(AnsiEscapeTest, ACutSequenceRunsToTheEnd) {
  EXPECT_EQ(AnsiEscapeLength("\033[3", 0), 3u);
  EXPECT_EQ(WithoutAnsiEscapes("step: 1 \033[3"), "step: 1 ");
}

TEST(AnsiEscapeTest, TextKeepsEverythingButTheSequences) {
  // TorchTitan's metrics line as it colours it (torchtitan/tools/utils.py, Color).
  EXPECT_EQ(WithoutAnsiEscapes("\033[31mstep:  2  \033[32mloss:  8.1\033[39m"),
            "step:  2  loss:  8.1");
  EXPECT_EQ(WithoutAnsiEscapes("Grüße"), "Grüße");
  EXPECT_EQ(WithoutAnsiEscapes(""), "");
}

}  // namespace
}  // namespace paratune
