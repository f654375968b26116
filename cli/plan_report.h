// The parts of `paratune plan` that show more than PlanResponse carries: the memory map of
// every valid configuration and the explanation of one configuration (--explain). Rendered
// from the estimator's own plan; every figure carries its unit.
#ifndef PARATUNE_CLI_PLAN_REPORT_H_
#define PARATUNE_CLI_PLAN_REPORT_H_

#include <cstdint>
#include <string>

#include "estimator/cluster_spec.h"
#include "estimator/model_spec.h"
#include "estimator/parallel_config.h"
#include "estimator/planner.h"
#include "estimator/training_spec.h"

namespace paratune {

// Fujii et al. 2024's map: one row per (tp, cp, pp) of the plan's valid configurations (and
// per virtual pipeline size and recompute mode when the plan searches more than one), one
// column per searched micro-batch size, each cell the estimated peak memory per GPU as a
// percentage of capacity with its verdict ("62% SAFE"), "-" where that micro-batch size breaks
// a rule. A legend states the capacity and the thresholds.
std::string FormatMemoryMap(const Plan& plan, const PlanOptions& options,
                            const ClusterSpec& cluster);

// Why `dims` is or is not among the plan's candidates, in words that name the rule broken
// (with the fields and values), the dimension not searched and the flag that searches it, or
// the memory figures; then, when the rules hold, its memory breakdown and predicted step time.
// `shown` is how many candidates the plan table lists (--limit), to say whether it is there.
std::string FormatExplanation(const ConfigurationExplanation& explanation, const ParallelDims& dims,
                              const ModelSpec& model, const TrainingSpec& training,
                              const ClusterSpec& cluster, const PlanOptions& options,
                              const Plan& plan, int64_t shown);

}  // namespace paratune

#endif  // PARATUNE_CLI_PLAN_REPORT_H_
