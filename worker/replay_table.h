// The measured runs the `replay` backend answers from (DESIGN.md §8), indexed by exactly
// what was run: model dimensions, GPU (every catalog figure), nodes and GPUs per node, the
// training run (global batch, sequence length, precision, optimizer and gradient options)
// and the configuration (dp, tp, pp, cp, micro-batch, virtual pipeline, sequence parallel
// where tp > 1, recompute); for a mixture-of-experts model also its experts, the routing
// (capacity factor, dispatcher, grouped GEMM) and ep and etp.
#ifndef PARATUNE_WORKER_REPLAY_TABLE_H_
#define PARATUNE_WORKER_REPLAY_TABLE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "convert/spec_convert.h"
#include "proto/worker_config.pb.h"

namespace paratune {

// One measured run.
struct ReplayedRun {
  enum class Outcome {
    kCompleted,    // ran its steps; step_seconds is its measured mean step time
    kOutOfMemory,  // ran out of device memory
    kNoResult,     // the source tried it and reports no result without saying why
  };
  Outcome outcome = Outcome::kCompleted;
  // Mean step time, seconds; only for kCompleted. Published tables that give throughput
  // instead are converted by measured/measured_runs with the estimator's model FLOPs.
  double step_seconds = 0;
  // Peak device memory, bytes; 0 when the source does not report it.
  int64_t peak_memory_bytes = 0;
  // Where the run is written down, for messages: "FILE:LINE (what the source is)".
  std::string source;
};

// Immutable once loaded; thread-safe.
class ReplayTable {
 public:
  // Loads every table of `config`: published tables through measured/measured_runs (their file
  // name says which table they are), run tables in paratune's measured-runs schema
  // (docs/backends.md). INVALID_ARGUMENT naming the field and value for no tables, too many,
  // or a table that is not a known published one; the table's own error (NOT_FOUND for a
  // missing file, INVALID_ARGUMENT "FILE:LINE: column ..." for a bad cell or configuration)
  // prefixed with the field otherwise.
  static absl::StatusOr<ReplayTable> Load(const v1::ReplayConfig& config);

  // The runs measured for exactly `configuration`, in table order (a configuration measured in
  // several releases of a benchmark has several); empty when none was.
  const std::vector<ReplayedRun>& Find(const ResolvedConfiguration& configuration) const;

  // "168 runs in 1 table (llama31_8b_4d_abci_tsubame.csv)", for messages.
  const std::string& summary() const { return summary_; }

 private:
  ReplayTable() = default;
  void Add(const ResolvedConfiguration& configuration, ReplayedRun run);

  absl::flat_hash_map<std::string, std::vector<ReplayedRun>> runs_;
  std::string summary_;
};

}  // namespace paratune

#endif  // PARATUNE_WORKER_REPLAY_TABLE_H_
