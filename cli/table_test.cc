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

}  // namespace
}  // namespace paratune
