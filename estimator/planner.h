// Enumerates the 4D-parallel space of a model on a cluster, checks the rules, prunes by
// memory and orders the survivors by predicted throughput (DESIGN.md §5.1).
#ifndef PARATUNE_ESTIMATOR_PLANNER_H_
#define PARATUNE_ESTIMATOR_PLANNER_H_

#include <array>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "estimator/cluster_spec.h"
#include "estimator/memory_model.h"
#include "estimator/model_spec.h"
#include "estimator/parallel_config.h"
#include "estimator/performance_model.h"
#include "estimator/training_spec.h"

namespace paratune {

// The largest expert (tensor) parallel size a search space may list.
inline constexpr int64_t kMaxExpertParallelSize = 4096;
// The largest hybrid-sharding group a search space may list (the largest cluster's GPUs).
inline constexpr int64_t kMaxDpShardGroup = 65536 * 64;

struct PlanOptions {
  // Micro-batch sizes to enumerate; empty means 1, 2, 4, 8, 16.
  std::vector<int64_t> micro_batch_sizes;
  // Virtual pipeline sizes v to enumerate (v > 1 only where pp > 1); empty means 1 only.
  std::vector<int64_t> virtual_pipeline_sizes;
  // Recompute modes to enumerate; empty means kNone only.
  std::vector<Recompute> recompute_modes;
  // Expert parallel sizes to enumerate for a mixture-of-experts model; empty means every
  // divisor of its routed experts. A dense model is planned with ep 1 only and refuses a list.
  std::vector<int64_t> expert_parallel_sizes;
  // Expert tensor parallel sizes to enumerate for a mixture-of-experts model; empty means the
  // tensor parallel size of each configuration (Megatron-LM's default). A dense model is
  // planned with that default only and refuses a list.
  std::vector<int64_t> expert_tensor_parallel_sizes;
  // Data-parallel sharding modes to enumerate; empty means the training's default
  // (TrainingSpec::DefaultDataParallelSharding).
  std::vector<DataParallelSharding> dp_sharding_modes;
  // Hybrid-sharding groups to enumerate (ParallelDims::dp_shard_group; 0 = all dp ranks);
  // empty means 0. A group is enumerated where it is a proper divisor of dp and something is
  // sharded.
  std::vector<int64_t> dp_shard_groups;
  PlacementRules rules;
  MemoryOptions memory;
  // Keep RISKY configurations among the candidates (SAFE only otherwise).
  bool include_risky = false;
};

struct PlanCounts {
  // (dp, tp, pp, cp, b, v, recompute, ep, etp) with dp x tp x pp x cp = GPUs and
  // etp x ep x pp dividing them
  int64_t enumerated = 0;
  int64_t valid = 0;  // pass CheckRules
  int64_t safe = 0;   // valid and SAFE
  int64_t risky = 0;  // valid and RISKY
  int64_t out_of_memory = 0;
};

struct PlannedConfig {
  ParallelConfig config;
  MemoryEstimate memory;
  PerformanceEstimate predicted;
};

// One valid configuration's memory verdict, compact (the plan keeps one per valid
// configuration, for the memory map of `paratune plan` and --explain).
struct MemoryMapEntry {
  ParallelDims dims;
  float fraction_of_capacity = 0;  // peak estimate / capacity
  MemoryVerdict verdict = MemoryVerdict::kSafe;
};

struct Plan {
  PlanCounts counts;
  // SAFE (and RISKY if asked) configurations, best predicted TFLOP/s per GPU first; ties
  // broken by less memory, then by (tp, pp, cp, micro-batch, v, recompute, ep, etp), so the
  // order is deterministic.
  std::vector<PlannedConfig> candidates;
  // Invalid configurations per rule, indexed by Rejection.
  std::array<int64_t, static_cast<int>(Rejection::kCount)> rejections{};
  // Every valid configuration in enumeration order (tp, cp, pp, ep, etp, v, recompute,
  // micro-batch ascending), whatever its verdict: group by (tp, cp, pp) for the paper's map of
  // micro-batch sizes marked SAFE / RISKY / OOM.
  std::vector<MemoryMapEntry> memory_map;
};

// The values PlanConfigurations enumerates for options' lists: the given ones sorted and
// without repeats, or the defaults when a list is empty.
std::vector<int64_t> SearchedMicroBatchSizes(const PlanOptions& options);
std::vector<int64_t> SearchedVirtualPipelineSizes(const PlanOptions& options);
std::vector<Recompute> SearchedRecomputeModes(const PlanOptions& options);
std::vector<DataParallelSharding> SearchedDataParallelShardings(const TrainingSpec& training,
                                                                const PlanOptions& options);
std::vector<int64_t> SearchedDpShardGroups(const PlanOptions& options);
// For expert parallelism the defaults depend on the model: {1} for a dense model; for a
// mixture-of-experts one the divisors of its experts. Expert tensor parallel sizes: {0}
// (ParallelDims.etp 0, the tp of each configuration) when the list is empty or the model dense.
std::vector<int64_t> SearchedExpertParallelSizes(const ModelSpec& model,
                                                 const PlanOptions& options);
std::vector<int64_t> SearchedExpertTensorParallelSizes(const ModelSpec& model,
                                                       const PlanOptions& options);

// A field error naming space.expert_parallel_sizes or space.expert_tensor_parallel_sizes
// (or its entry) when an entry is outside [1, kMaxExpertParallelSize], or when the model is
// dense and the list is not empty; OK otherwise. PlanConfigurations checks it; a search spec
// is checked with it as it is resolved.
absl::Status CheckExpertSizeLists(const ModelSpec& model, const PlanOptions& options);

// How many configurations PlanConfigurations enumerates (Plan.counts.enumerated) for `model`
// on a cluster of `world_size` GPUs and `options`, counted without checking or estimating any,
// so that a caller can refuse a space too large to plan. 0 for world_size < 1.
int64_t CountEnumeratedConfigurations(const ModelSpec& model, const TrainingSpec& training,
                                      int64_t world_size, const PlanOptions& options);

// What a plan made of one configuration, for `paratune plan --explain`.
enum class PlanOutcome {
  kCandidate,           // valid and kept by the memory verdict: plan.candidates[rank]
  kRejected,            // breaks a validity rule: `rejection`
  kOutsideSearchSpace,  // valid, but a dimension the plan does not enumerate: `outside`
  kOutOfMemory,         // valid, estimated above capacity
  kRisky,               // valid, RISKY, and the plan keeps SAFE configurations only
};

// The dimensions a plan enumerates beyond dp, tp, pp and cp.
enum class SearchDimension {
  kMicroBatch,            // not among SearchedMicroBatchSizes
  kVirtualPipeline,       // not among SearchedVirtualPipelineSizes
  kRecompute,             // not among SearchedRecomputeModes
  kSequenceParallel,      // the plan uses sequence parallelism exactly when tp > 1
  kExpertParallel,        // not among SearchedExpertParallelSizes
  kExpertTensorParallel,  // not among SearchedExpertTensorParallelSizes (resolved)
  kDpSharding,            // not among SearchedDataParallelShardings
  kDpShardGroup,          // not among SearchedDpShardGroups
};

struct ConfigurationExplanation {
  PlanOutcome outcome = PlanOutcome::kCandidate;
  Rejection rejection = Rejection::kValid;                 // the first rule broken
  SearchDimension outside = SearchDimension::kMicroBatch;  // for kOutsideSearchSpace
  bool has_memory = false;  // the rules hold, so memory and performance were estimated
  MemoryEstimate memory;
  PerformanceEstimate predicted;
  int64_t rank = -1;  // index in plan.candidates for kCandidate, else -1
};

// Why `dims` is or is not among plan.candidates, where `plan` is what PlanConfigurations
// returned for the same model, training run, cluster, options and parameters. The rules are
// checked first, then the search space, then memory.
ConfigurationExplanation ExplainConfiguration(const ModelSpec& model, const TrainingSpec& training,
                                              const ClusterSpec& cluster,
                                              const PlanOptions& options,
                                              const PerformanceParameters& params, const Plan& plan,
                                              const ParallelDims& dims);

// INVALID_ARGUMENT naming the field when an option is out of range (e.g. a micro-batch size
// < 1, a virtual pipeline size < 1, safe_fraction outside (0, 1], an expert list for a dense
// model). Allocates only for the growing result vectors, never per configuration.
absl::StatusOr<Plan> PlanConfigurations(const ModelSpec& model, const TrainingSpec& training,
                                        const ClusterSpec& cluster, const PlanOptions& options,
                                        const PerformanceParameters& params);

}  // namespace paratune

#endif  // PARATUNE_ESTIMATOR_PLANNER_H_
