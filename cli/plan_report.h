// The parts of `paratune plan` beyond its summary and candidates: the memory map of the
// valid configurations and the explanation of one configuration (--explain,
// convert/plan_explanation.h). Every figure carries its unit.
#ifndef PARATUNE_CLI_PLAN_REPORT_H_
#define PARATUNE_CLI_PLAN_REPORT_H_

#include <string>

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

// `plan --explain`'s answer for `config`: the configuration and why it is or is not a
// candidate (ExplainResponse.reason), then, when the rules hold, its memory breakdown and
// predicted step time (FormatEstimate).
std::string FormatExplanation(const v1::ParallelConfig& config,
                              const v1::ExplainResponse& explanation);

}  // namespace paratune

#endif  // PARATUNE_CLI_PLAN_REPORT_H_
