// The worker's side of the short-probe protocol (docs/short_probes.md, estimator/short_probe.h),
// one way for every backend that runs short steps (sim, command, the cuda probe): which counts
// an assignment may ask for (ProbeSpec), and how a ProbeResult reports the short steps and the
// full step extrapolated from them (the result builder).
#ifndef PARATUNE_WORKER_SHORT_STEPS_H_
#define PARATUNE_WORKER_SHORT_STEPS_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "estimator/parallel_config.h"
#include "estimator/short_probe.h"
#include "proto/probe.pb.h"

namespace paratune {

// OK when assignment.micro_batch_counts lists no count (full steps) or two or more, ascending,
// each in [1, full_micro_batches - 1], and multiples of pipeline_parallel when `config` is
// interleaved (Megatron-LM's interleaved schedule needs that). INVALID_ARGUMENT naming the
// field and value otherwise, e.g. "assignment.micro_batch_counts[1] (2) must be in [3, 7]".
absl::Status CheckMicroBatchCounts(const v1::ProbeAssignment& assignment,
                                   const ParallelConfig& config, int64_t full_micro_batches);

// Records `series` (the timed short steps, ascending counts) in result.short_steps and
// extrapolates the full step of `full_micro_batches` micro-batches from them
// (ExtrapolateFullStep). On success sets result.extrapolation, adds "full_step" to
// result.extrapolated and returns the extrapolated full steps, one per timed step index, for
// the result's step times. When they cannot be extrapolated (e.g. the steps did not grow with
// their micro-batches) returns ExtrapolateFullStep's error; the short steps stay recorded, for
// whoever looks at why.
absl::StatusOr<std::vector<double>> ExtrapolateShortSteps(
    const std::vector<ShortStepSeries>& series, int64_t full_micro_batches,
    const ParallelConfig& config, v1::ProbeResult& result);

}  // namespace paratune

#endif  // PARATUNE_WORKER_SHORT_STEPS_H_
