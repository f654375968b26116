// The values RunRank (worker/cuda/rank_runner.h) reduces over every rank of a probe in one
// all-reduce (maximum) of doubles: the timed steps, the instrumented step's phases, the
// collective benchmarks and each pipeline stage's peak memory, at fixed places so that every
// rank packs and unpacks the same layout. Pure, so that the layout is tested on any machine.
#ifndef PARATUNE_WORKER_PROBE_MEASUREMENT_LAYOUT_H_
#define PARATUNE_WORKER_PROBE_MEASUREMENT_LAYOUT_H_

#include <array>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "worker/probe/probe_phase.h"

namespace paratune {

// BenchmarkCollectives measures at most one collective per communicator: tp, cp, dp, pp.
inline constexpr int64_t kMostCollectives = 4;

// What one rank measured, or (unpacked) the maximum over every rank.
struct RankMeasurements {
  // Seconds of each timed step (ProbeSpec::TimedMicroBatches' series, in order).
  std::vector<double> step_seconds;
  std::array<double, static_cast<int>(ProbePhase::kCount)> phase_seconds{};
  // Seconds per operation of each collective benchmarked, at most kMostCollectives (unpacked:
  // kMostCollectives, 0 past the ones benchmarked).
  std::vector<double> collective_seconds;
  // Bytes in use per pipeline stage: a rank fills its own stage's and leaves the others 0.
  std::vector<double> stage_peak_bytes;
};

class MeasurementLayout {
 public:
  // `steps` timed steps and `stages` pipeline stages; INVALID_ARGUMENT naming the value for
  // a negative step count or fewer than one stage.
  static absl::StatusOr<MeasurementLayout> Create(int64_t steps, int64_t stages);

  // Doubles of the packed values.
  int64_t size() const { return steps_ + kPhases + kMostCollectives + stages_; }

  // `measurements` in the layout; INVALID_ARGUMENT naming the field whose count differs from
  // the layout's (more than kMostCollectives collectives).
  absl::StatusOr<std::vector<double>> Pack(const RankMeasurements& measurements) const;
  // The inverse of Pack; INVALID_ARGUMENT when `values` is not size() long.
  absl::StatusOr<RankMeasurements> Unpack(const std::vector<double>& values) const;

 private:
  static constexpr int64_t kPhases = static_cast<int64_t>(ProbePhase::kCount);
  MeasurementLayout(int64_t steps, int64_t stages) : steps_(steps), stages_(stages) {}

  int64_t steps_;
  int64_t stages_;
};

}  // namespace paratune

#endif  // PARATUNE_WORKER_PROBE_MEASUREMENT_LAYOUT_H_
