// The recompute modes a search space holds by default (docs/estimator.md, "Recompute by
// default"): none, and selective and full as well when no configuration fits without
// recompute, so that a request which leaves the modes unset gets candidates where recompute
// gives some (Llama-3.1-70B on 16 H100-80GB, say) and stays as small as before elsewhere.
#ifndef PARATUNE_ESTIMATOR_DEFAULT_RECOMPUTE_H_
#define PARATUNE_ESTIMATOR_DEFAULT_RECOMPUTE_H_

#include "absl/status/statusor.h"
#include "estimator/cluster_spec.h"
#include "estimator/model_spec.h"
#include "estimator/performance_parameters.h"
#include "estimator/planner.h"
#include "estimator/training_spec.h"

namespace paratune {

struct DefaultRecomputePlan {
  Plan plan;
  // The options planned: the given ones, with recompute_modes {none, selective, full} when
  // recompute_added.
  PlanOptions options;
  bool recompute_added = false;
};

// PlanConfigurations of `options`; when options.recompute_modes is empty (the default: none
// only) and that plan has no candidate, the plan of none, selective and full recompute
// instead, even if it has none either. PlanConfigurations' errors.
absl::StatusOr<DefaultRecomputePlan> PlanWithDefaultRecompute(const ModelSpec& model,
                                                              const TrainingSpec& training,
                                                              const ClusterSpec& cluster,
                                                              const PlanOptions& options,
                                                              const PerformanceParameters& params);

}  // namespace paratune

#endif  // PARATUNE_ESTIMATOR_DEFAULT_RECOMPUTE_H_
