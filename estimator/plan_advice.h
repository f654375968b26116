// What to change when a plan has no candidate (docs/estimator.md, "Advice when nothing
// fits"): each function below tries one kind of change to the request alone, plans it
// (PlanConfigurations, same rules and memory verdicts), and says how many candidates the
// changed plan has. Pure; each plans a handful of times at most, so a caller runs them only for
// a plan without candidates.
#ifndef PARATUNE_ESTIMATOR_PLAN_ADVICE_H_
#define PARATUNE_ESTIMATOR_PLAN_ADVICE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "estimator/cluster_spec.h"
#include "estimator/model_spec.h"
#include "estimator/parallel_config.h"
#include "estimator/planner.h"
#include "estimator/training_spec.h"

namespace paratune {

enum class AdviceKind {
  kRecompute,        // search more recompute modes: recompute_modes
  kNodes,            // more nodes of the same GPUs: num_nodes
  kGpuType,          // a catalog GPU type with more memory: gpu_type
  kFp8Parameters,    // fp8 GEMMs with fp8 weights (fp8_param_gather); no field
  kSequenceLength,   // a shorter sequence: seq_len
  kMicroBatchSizes,  // micro-batch sizes below the smallest searched: micro_batch_sizes
};

// One change to a plan's request and what it gives.
struct PlanAdvice {
  AdviceKind kind = AdviceKind::kRecompute;
  // The changed setting, the one field of its kind (the others stay empty or 0).
  std::vector<Recompute> recompute_modes;
  int64_t num_nodes = 0;
  std::string gpu_type;
  int64_t seq_len = 0;
  std::vector<int64_t> micro_batch_sizes;
  // Candidates of the plan with this change alone: SAFE ones, and RISKY ones when
  // options.include_risky; always > 0.
  int64_t candidates = 0;
};

// A plan's request: what PlanConfigurations takes but its performance parameters, which only
// order candidates (each function plans with DefaultPerformanceParameters of its GPU).
struct PlanRequestValues {
  const ModelSpec& model;
  const TrainingSpec& training;
  const ClusterSpec& cluster;
  const PlanOptions& options;
};

// Each returns nullopt when its change does not apply (already searched, not possible on the
// GPU) or gives no candidate either.
//
// Recompute trades compute for activation memory (Korthikanti et al. 2022, arXiv 2205.05198):
// the searched modes with selective and full added, when they lack one.
std::optional<PlanAdvice> AdviseRecompute(const PlanRequestValues& request);
// The smallest node count with candidates among num_nodes + 1 .. 2 x num_nodes (at most 64 of
// them, in order), then 4, 8 and 16 x num_nodes, within kMaxNumNodes: model states shard over
// more GPUs (DESIGN.md §5.2).
std::optional<PlanAdvice> AdviseNodes(const PlanRequestValues& request);
// The catalog GPU type with the least memory above the cluster's GPU's that gives
// candidates, the cluster's node count and GPUs per node kept; Ampere only for bf16 training
// (CheckTrainingRunsOnGpu's rule: no fp8 tensor cores).
std::optional<PlanAdvice> AdviseGpuType(const PlanRequestValues& request);
// fp8 GEMMs with fp8 linear weights gathered in fp8 (Megatron-LM --fp8 and
// --fp8-param-gather): no bf16 copy of those weights (memory_model.h, kFp8WeightCopies).
// Only on a Hopper-class GPU with the distributed optimizer, when not set already.
std::optional<PlanAdvice> AdviseFp8Parameters(const PlanRequestValues& request);
// The longest of seq_len / 2, / 4, ... (at least 1) with candidates: activations grow with
// the sequence (DESIGN.md §5.2).
std::optional<PlanAdvice> AdviseShorterSequence(const PlanRequestValues& request);
// The powers of two below the smallest searched micro-batch size, when it is above 1:
// activations grow with the micro-batch.
std::optional<PlanAdvice> AdviseSmallerMicroBatches(const PlanRequestValues& request);

// Every advice that applies, in the order of the functions above.
std::vector<PlanAdvice> AdvisePlan(const PlanRequestValues& request);

}  // namespace paratune

#endif  // PARATUNE_ESTIMATOR_PLAN_ADVICE_H_
