// Fuzzes the CSV reader (measured/csv_table.h) with every typed getter on every cell of the
// columns the project's tables use, and the row lines it reports.
#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"
#include "fuzz/fuzz_input.h"
#include "measured/csv_table.h"

namespace {

// Column names of worker/testdata/replay_runs.csv and data/measured/, plus names the seeds
// use, so the getters meet real cells.
constexpr const char* kColumns[] = {"a",
                                    "b",
                                    "model",
                                    "gpu",
                                    "dp",
                                    "tp",
                                    "pp",
                                    "step_time_s",
                                    "outcome",
                                    "recompute",
                                    "sequence_parallel",
                                    "source"};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using paratune::FuzzCheck;
  const absl::StatusOr<paratune::CsvTable> table =
      paratune::CsvTable::Parse("fuzz.csv", paratune::FuzzText(data, size));
  if (!table.ok()) {
    FuzzCheck(table.status().code() == absl::StatusCode::kInvalidArgument,
              "a malformed table is INVALID_ARGUMENT");
    return 0;
  }
  int64_t previous_line = 1;
  for (size_t row = 0; row < table->num_rows(); ++row) {
    FuzzCheck(table->line(row) > previous_line, "rows start on increasing lines after the header");
    previous_line = table->line(row);
    for (const char* column : kColumns) {
      (void)table->String(row, column);
      (void)table->Int(row, column);
      (void)table->Double(row, column);
      (void)table->IntOr(row, column, -1);
      (void)table->Bool(row, column);
    }
  }
  return 0;
}
