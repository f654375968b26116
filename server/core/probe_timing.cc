#include "server/core/probe_timing.h"

#include <algorithm>

#include "convert/search_request.h"
#include "estimator/short_probe.h"

namespace paratune {

ProbeTiming TimeProbe(const PlannedConfig& planned, const TrainingSpec& training,
                      const v1::ProbeSettings& probe, int64_t timed_steps) {
  ProbeSteps steps = ProbeStepsOf(probe);
  steps.timed_steps = timed_steps;
  const ShortProbePlan plan =
      PlanProbeSteps(PlanShortProbe(planned.config, training), planned.predicted, steps);
  ProbeTiming timing;
  timing.timed_steps = timed_steps;
  timing.micro_batch_counts = plan.micro_batch_counts;
  timing.predicted_seconds = PredictedProbeSeconds(planned.predicted, plan, steps);
  timing.deadline_seconds =
      probe.deadline_seconds() > 0
          ? probe.deadline_seconds()
          : std::max(kMinDeadlineSeconds, kDeadlineFactor * timing.predicted_seconds);
  return timing;
}

}  // namespace paratune
