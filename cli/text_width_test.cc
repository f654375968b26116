#include "cli/text_width.h"

#include "gtest/gtest.h"

namespace paratune {
namespace {

TEST(VisibleWidthTest, CountsCodePointsAndSkipsColourSequences) {
  EXPECT_EQ(VisibleWidth("abc"), 3u);
  EXPECT_EQ(VisibleWidth("\033[32m62% SAFE\033[0m"), 8u);
  EXPECT_EQ(VisibleWidth("\xc3\x97"), 1u);  // U+00D7, two bytes
  EXPECT_EQ(VisibleWidth(""), 0u);
}

TEST(CutToWidthTest, EndsACutTextInDots) {
  EXPECT_EQ(CutToWidth("dp4 tp2 pp1 cp1 mbs1", 30), "dp4 tp2 pp1 cp1 mbs1");
  EXPECT_EQ(CutToWidth("dp4 tp2 pp1 cp1 mbs1", 10), "dp4 tp2...");
  EXPECT_EQ(CutToWidth("dp4 tp2", 2), "..");
  EXPECT_EQ(CutToWidth("a\xc3\x97"
                       "bcdef",
                       5),
            "a\xc3\x97...");
}

TEST(WrapToWidthTest, BreaksAtSpacesAndIndentsWhatFollows) {
  EXPECT_EQ(WrapToWidth("one two three four", 9, 2), "one two\n  three\n  four\n");
  EXPECT_EQ(WrapToWidth("short", 20, 2), "short\n");
  // A word longer than a line is cut.
  EXPECT_EQ(WrapToWidth("a verylongword", 8, 2), "a\n  ver...\n");
  EXPECT_EQ(WrapToWidth("", 8, 2), "\n");
}

}  // namespace
}  // namespace paratune
