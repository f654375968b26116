// The parts of `paratune plan` beyond its summary and candidates: the memory map of the
// valid configurations and the explanation of one configuration (--explain, rendered from
// the estimator's own plan). Every figure carries its unit.
#ifndef PARATUNE_CLI_PLAN_REPORT_H_
#define PARATUNE_CLI_PLAN_REPORT_H_

#include <cstdint>
#include <string>

#include "estimator/cluster_spec.h"
#include "estimator/model_spec.h"
#include "estimator/parallel_config.h"
#include "estimator/planner.h"
#include "estimator/training_spec.h"
#include "proto/autotuner_service.pb.h"

namespace paratune {

// Fujii et al. 2024's map (PlanResponse.memory_map): one row per (tp, cp, pp) of the
// plan's valid configurations (and per virtual pipeline size and recompute mode when the
// plan searches more than one), one column per searched micro-batch size, each cell the
// estimated peak memory per GPU as a percentage of capacity with its verdict ("62% SAFE"),
// "-" where that micro-batch size breaks a rule. A legend states the capacity and the
// thresholds, and a last line how many rows the limit left out. With `color`, each cell is
// green, yellow or red by its verdict (the words stay, for readers who cannot tell the
// colours apart) and "-" is dim.
std::string FormatMemoryMap(const v1::MemoryMap& map, bool color);

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
