#include "worker/short_steps.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

namespace paratune {

absl::Status CheckMicroBatchCounts(const v1::ProbeAssignment& assignment,
                                   const ParallelConfig& config, int64_t full_micro_batches) {
  const auto& counts = assignment.micro_batch_counts();
  if (counts.size() == 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("assignment.micro_batch_counts (", counts[0],
                     ") must list no count or at least two to extrapolate from"));
  }
  for (int i = 0; i < counts.size(); ++i) {
    const std::string field = absl::StrCat("assignment.micro_batch_counts[", i, "]");
    const int64_t low = i == 0 ? 1 : counts[i - 1] + 1;
    if (counts[i] < low || counts[i] >= full_micro_batches) {
      return absl::InvalidArgumentError(absl::StrCat(field, " (", counts[i], ") must be in [", low,
                                                     ", ", full_micro_batches - 1, "]"));
    }
    if (config.virtual_pipeline() > 1 && counts[i] % config.pp() != 0) {
      return absl::InvalidArgumentError(absl::StrCat(field, " (", counts[i],
                                                     ") must be a multiple of pipeline_parallel (",
                                                     config.pp(), ") for an interleaved pipeline"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<double>> ExtrapolateShortSteps(
    const std::vector<ShortStepSeries>& series, int64_t full_micro_batches,
    const ParallelConfig& config, v1::ProbeResult& result) {
  for (const ShortStepSeries& s : series) {
    v1::ShortSteps& short_steps = *result.add_short_steps();
    short_steps.set_micro_batches(s.micro_batches);
    for (double t : s.step_times_seconds) short_steps.add_step_times_seconds(t);
  }
  absl::StatusOr<StepExtrapolation> extrapolated =
      ExtrapolateFullStep(series, full_micro_batches, config.pp(), config.virtual_pipeline());
  if (!extrapolated.ok()) return extrapolated.status();
  v1::StepExtrapolation& how = *result.mutable_extrapolation();
  how.set_full_micro_batches(full_micro_batches);
  how.set_slot_seconds(extrapolated->slot_seconds);
  how.set_fill_drain_seconds(extrapolated->fill_drain_seconds);
  how.set_fixed_seconds(extrapolated->fixed_seconds);
  result.add_extrapolated("full_step");
  return std::move(extrapolated->full_step_seconds);
}

}  // namespace paratune
