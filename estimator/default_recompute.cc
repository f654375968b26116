#include "estimator/default_recompute.h"

#include <utility>

namespace paratune {

absl::StatusOr<DefaultRecomputePlan> PlanWithDefaultRecompute(const ModelSpec& model,
                                                              const TrainingSpec& training,
                                                              const ClusterSpec& cluster,
                                                              const PlanOptions& options,
                                                              const PerformanceParameters& params) {
  DefaultRecomputePlan planned{Plan(), options, false};
  absl::StatusOr<Plan> plan = PlanConfigurations(model, training, cluster, options, params);
  if (!plan.ok()) return plan.status();
  if (!plan->candidates.empty() || !options.recompute_modes.empty()) {
    planned.plan = *std::move(plan);
    return planned;
  }
  planned.options.recompute_modes = {Recompute::kNone, Recompute::kSelective, Recompute::kFull};
  planned.recompute_added = true;
  plan = PlanConfigurations(model, training, cluster, planned.options, params);
  if (!plan.ok()) return plan.status();
  planned.plan = *std::move(plan);
  return planned;
}

}  // namespace paratune
