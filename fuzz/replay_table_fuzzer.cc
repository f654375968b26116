// Fuzzes the replay backend's run tables (worker/replay_table.h): the input is one run table
// in paratune's measured-runs schema (docs/backends.md), loaded through a ReplayConfig as the
// worker loads it.
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "fuzz/fuzz_input.h"
#include "proto/worker_config.pb.h"
#include "worker/replay_table.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using paratune::FuzzCheck;
  paratune::v1::ReplayConfig config;
  config.add_run_tables(paratune::WriteFuzzFile("runs.csv", paratune::FuzzText(data, size)));
  const absl::StatusOr<paratune::ReplayTable> table = paratune::ReplayTable::Load(config);
  if (!table.ok()) {
    FuzzCheck(table.status().code() == absl::StatusCode::kInvalidArgument,
              "a bad run table is INVALID_ARGUMENT");
    return 0;
  }
  FuzzCheck(!table->summary().empty(), "a loaded table has a summary");
  return 0;
}
