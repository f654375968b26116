#include "measured/csv_table.h"

#include "gtest/gtest.h"

namespace paratune {
namespace {

TEST(CsvTableTest, ParsesQuotedFieldsAndTypes) {
  const absl::StatusOr<CsvTable> table = CsvTable::Parse(
      "t.csv", "name,n,x,flag,notes\n\"a, \"\"b\"\"\",3,2.5,true,\"two\nlines\"\nc,,1e3,false,\n");
  ASSERT_TRUE(table.ok()) << table.status();
  ASSERT_EQ(table->num_rows(), 2u);
  EXPECT_EQ(*table->String(0, "name"), "a, \"b\"");
  EXPECT_EQ(*table->Int(0, "n"), 3);
  EXPECT_DOUBLE_EQ(*table->Double(1, "x"), 1000);
  EXPECT_TRUE(*table->Bool(0, "flag"));
  EXPECT_EQ(*table->IntOr(1, "n", 7), 7);
  EXPECT_EQ(table->line(0), 2);
  EXPECT_EQ(table->line(1), 4);  // the quoted newline moved it down
}

TEST(CsvTableTest, BadCellNamesFileLineAndColumn) {
  const absl::StatusOr<CsvTable> table = CsvTable::Parse("t.csv", "a,b\n1,2\n3,x\n");
  ASSERT_TRUE(table.ok());
  const absl::StatusOr<int64_t> value = table->Int(1, "b");
  EXPECT_EQ(value.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(value.status().message(),
            "t.csv:3: column \"b\" (2): cannot parse \"x\" as an integer");
  EXPECT_EQ(table->Double(0, "missing").status().message(), "t.csv: no column \"missing\"");
}

TEST(CsvTableTest, ARefusedCellNamesFileLineAndColumn) {
  const absl::StatusOr<CsvTable> table = CsvTable::Parse("t.csv", "a,b\n1,2\n3,x\n");
  ASSERT_TRUE(table.ok());
  const absl::Status status = table->InvalidCell(1, "b", "\"x\" is not y or z");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "t.csv:3: column \"b\": \"x\" is not y or z");
}

TEST(CsvTableTest, MalformedFilesAreRejected) {
  EXPECT_EQ(CsvTable::Parse("t.csv", "a,b\n1,2,3\n").status().message(),
            "t.csv:2: 3 fields, but the header has 2");
  EXPECT_EQ(CsvTable::Parse("t.csv", "a,b\n\"1,2\n").status().message(),
            "t.csv:2: unterminated quoted field");
  EXPECT_EQ(CsvTable::Load("/nonexistent/t.csv").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace paratune
