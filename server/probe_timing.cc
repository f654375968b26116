#include "server/probe_timing.h"

#include <algorithm>

#include "common/status_macros.h"
#include "convert/search_request.h"
#include "convert/spec_convert.h"
#include "estimator/performance_model.h"
#include "estimator/short_probe.h"

namespace paratune {

absl::StatusOr<ProbeTiming> TimeProbe(const v1::SearchSpec& spec, const v1::ParallelConfig& config,
                                      int64_t timed_steps) {
  PT_ASSIGN_OR_RETURN(const ResolvedSpec resolved, ResolveSearchSpec(spec));
  PT_ASSIGN_OR_RETURN(const ParallelConfig parallel,
                      ParallelConfigFromProto(config, resolved.model, resolved.training,
                                              resolved.cluster, resolved.plan_options.rules));
  const PerformanceEstimate full =
      PredictPerformance(resolved.model, resolved.training, resolved.cluster, parallel,
                         DefaultPerformanceParameters(resolved.cluster.gpu()));
  ShortProbePlan plan = PlanShortProbe(parallel, resolved.training);
  if (!RunsShortSteps(spec.probe())) plan.micro_batch_counts.clear();
  ProbeTiming timing;
  timing.micro_batch_counts = plan.micro_batch_counts;
  timing.predicted_seconds = PredictedProbeSeconds(full, plan, spec.probe().warmup_steps(),
                                                   timed_steps, kProbeStartupSeconds);
  timing.deadline_seconds =
      spec.probe().deadline_seconds() > 0
          ? spec.probe().deadline_seconds()
          : std::max(kMinDeadlineSeconds, kDeadlineFactor * timing.predicted_seconds);
  return timing;
}

}  // namespace paratune
