#include "cli/table.h"

#include "gtest/gtest.h"

namespace paratune {
namespace {

TEST(TableTest, AlignsTextLeftAndNumbersRight) {
  Table table({{"config", false}, {"TFLOP/s", true}});
  table.AddRow({"dp4 tp1", "402.1"});
  table.AddRow({"dp2 tp2 pp1", "7.0"});
  EXPECT_EQ(table.Render(),
            "config       TFLOP/s\n"
            "-----------  -------\n"
            "dp4 tp1        402.1\n"
            "dp2 tp2 pp1      7.0\n");
}

TEST(TableTest, MissingCellsPrintEmptyAndExtraCellsAreDropped) {
  Table table({{"a", false}, {"b", false}});
  table.AddRow({"x"});
  table.AddRow({"1", "2", "3"});
  EXPECT_EQ(table.Render(),
            "a  b\n"
            "-  -\n"
            "x\n"
            "1  2\n");
}

TEST(TableTest, WidthsCountTerminalColumnsNotColourSequences) {
  Table table({{"verdict", false}, {"x", false}});
  table.AddRow({"\033[32mSAFE\033[0m", "1"});
  EXPECT_EQ(table.Render(),
            "verdict  x\n"
            "-------  -\n"
            "\033[32mSAFE\033[0m     1\n");
}

// rank, a configuration cut at step 2, a column dropped at step 1, one never touched.
Table Fittable() {
  Table table({{"rank", true},
               {"config", false, /*cut_step=*/2, /*min_width=*/8},
               {"memory", true, 0, 0, /*drop_step=*/1},
               {"measured", true}});
  table.AddRow({"1", "dp4 tp2 pp1 cp1 mbs1", "52.1%", "412.3"});
  return table;
}

TEST(RenderFittedTest, AWideEnoughTableRendersWhole) {
  EXPECT_EQ(Fittable().RenderFitted(100), Fittable().Render());
}

TEST(RenderFittedTest, DropsThenCutsOnlyAsMuchAsNeeded) {
  // Whole: 4 + 20 + 6 + 8 + 3 x 2 = 44. Without memory 36; then config cut by 4.
  EXPECT_EQ(Fittable().RenderFitted(32),
            "rank  config            measured\n"
            "----  ----------------  --------\n"
            "   1  dp4 tp2 pp1 c...     412.3\n");
}

TEST(RenderFittedTest, NeverCutsBelowTheMinimumNorTouchesOtherColumns) {
  const std::string text = Fittable().RenderFitted(10);
  EXPECT_EQ(text,
            "rank  config    measured\n"
            "----  --------  --------\n"
            "   1  dp4 t...     412.3\n");
}

}  // namespace
}  // namespace paratune
