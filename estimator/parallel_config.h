// One 4D-parallel configuration and the rules that make it valid (DESIGN.md §5.1).
#ifndef PARATUNE_ESTIMATOR_PARALLEL_CONFIG_H_
#define PARATUNE_ESTIMATOR_PARALLEL_CONFIG_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "estimator/cluster_spec.h"
#include "estimator/data_parallel_sharding.h"
#include "estimator/model_spec.h"
#include "estimator/training_spec.h"

namespace paratune {

enum class Recompute { kNone, kSelective, kFull };

// "none", "selective", "full".
const char* RecomputeName(Recompute recompute);

// Raw configuration fields; a ParallelConfig holds only combinations that passed the rules.
struct ParallelDims {
  int64_t dp = 1;                // data parallel d
  int64_t tp = 1;                // tensor parallel t
  int64_t pp = 1;                // pipeline parallel p
  int64_t cp = 1;                // context parallel c
  int64_t micro_batch = 1;       // b
  int64_t virtual_pipeline = 1;  // v, 1 = not interleaved
  bool sequence_parallel = true;
  Recompute recompute = Recompute::kNone;
  // The expert layers' own factorization of the same GPUs (Megatron-Core's "parallel
  // folding"): etp x ep x expert-dp x pp, beside the attention's tp x cp x dp x pp. Only a
  // mixture-of-experts model sets them; a dense model keeps ep 1 and etp 0.
  int64_t ep = 1;   // expert parallel (--expert-model-parallel-size): experts split over ep
  int64_t etp = 0;  // expert tensor parallel; 0 = tp, Megatron-LM's default when unset
  // How a replica's model states are spread over the data-parallel ranks (and the context
  // ranks, which hold the same parameters).
  DataParallelSharding dp_sharding = DataParallelSharding::kOptimizer;
  // Hybrid sharding (HSDP): the states sharded within groups of this many data-parallel ranks
  // and replicated across the dp / group groups. 0 = sharded over all dp ranks.
  int64_t dp_shard_group = 0;
};

// The expert tensor-parallel size `dims` stands for: etp, or tp where etp is 0 (Megatron-LM
// megatron/core/parallel_state.py, initialize_model_parallel: expert_tensor_parallel_size
// None becomes tensor_model_parallel_size).
int64_t ExpertTensorParallel(const ParallelDims& dims);

// The data-parallel ranks a replica's sharded states are spread over: 1 without sharding,
// dp_shard_group under hybrid sharding, else dp. The context-parallel ranks hold the same
// parameters and shard with them, so a state is split over DataParallelShardRanks x cp.
int64_t DataParallelShardRanks(const ParallelDims& dims);

// dp x tp x pp x cp with the given micro-batch size, no interleaving and no recompute, and
// sequence parallelism exactly when tp > 1 (as the planner enumerates them).
ParallelDims MakeParallelDims(int64_t dp, int64_t tp, int64_t pp, int64_t cp, int64_t micro_batch);

// Switches of the validity rules.
struct PlacementRules {
  // tp x cp may span nodes (DESIGN.md §5.1: off by default, slow over the network).
  bool allow_tp_cp_across_nodes = false;
  // Layers that pp x vp does not divide may be split unevenly, the first and last stage
  // holding one layer fewer (Megatron's account-for-embedding/loss split; see
  // pipeline_layout.h). Off by default, as DESIGN.md §5.1 asks.
  bool allow_uneven_pipeline = false;
};

// Why a configuration is invalid; kValid when it is not. Cheap to compute (no allocation), so
// the planner can count rejections per reason for millions of configurations.
enum class Rejection {
  kValid = 0,
  kWorldSizeMismatch,        // dp x tp x pp x cp != cluster GPUs
  kTpHeads,                  // tp does not divide attention heads
  kTpKvHeads,                // tp and kv heads: neither divides the other
  kPpLayers,                 // pp does not divide layers (nor layers + 2 when uneven allowed)
  kVirtualPipelineLayers,    // v x pp does not divide layers (or v > 1 with pp = 1 or v > layers)
  kCpSequence,               // 2 x cp does not divide the sequence length
  kBatchDivisibility,        // dp x b does not divide the global batch (or b > global batch)
  kInterleavedMicroBatches,  // v > 1 and pp does not divide the micro-batches per step
  kTpCpAcrossNodes,          // tp x cp larger than a node (not allowed by the rules)
  // Expert parallelism (docs/estimator.md, "Expert parallelism", cites each in
  // Megatron-LM core_v0.19.0).
  kExpertParallelDense,        // ep > 1 for a model without experts
  kExpertTensorParallelDense,  // etp other than tp for a model without experts
  kExpertParallelExperts,      // ep does not divide the routed experts
  kExpertWorldSize,            // etp x ep x pp does not divide the GPUs (or ep < 1, etp < 0)
  kExpertTensorParallelFfn,    // etp does not divide the expert FFN width
  kMoeSequenceParallel,        // an MoE model with tp > 1 and no sequence parallelism
  kFlexDeepEpGroup,            // the flex dispatcher's DeepEP backend with etp x ep = 1
  // Data-parallel sharding (docs/estimator.md, "Data-parallel sharding").
  kDpShardGroup,            // dp_shard_group not a proper divisor of dp, or without sharding
  kFrameworkSharding,       // a sharding mode the training framework does not have
  kFp8ParamGatherSharding,  // fp8 weights gathered without sharded weights to gather
  kCount,
};

// Short stable description of a rule, e.g. "tensor_parallel does not divide heads".
const char* RejectionRule(Rejection rejection);

// The first rule `dims` breaks, or kValid. Dims with a field < 1 are kWorldSizeMismatch. Safe
// for fields of any magnitude (a request's, or `paratune plan --explain`'s): no product of
// them overflows.
Rejection CheckRules(const ModelSpec& model, const TrainingSpec& training,
                     const ClusterSpec& cluster, const PlacementRules& rules,
                     const ParallelDims& dims);

// A message naming the fields and values that break `rejection`, e.g.
// "config.tensor_parallel (16) does not divide model.num_kv_heads (8)".
std::string DescribeRejection(Rejection rejection, const ModelSpec& model,
                              const TrainingSpec& training, const ClusterSpec& cluster,
                              const ParallelDims& dims);

// A configuration valid for its model, training run and cluster. Immutable.
class ParallelConfig {
 public:
  // A field error (field_error.h) with DescribeRejection's message, against the first field
  // it names, when a rule is broken, or naming the field when a value is < 1.
  static absl::StatusOr<ParallelConfig> Create(const ModelSpec& model, const TrainingSpec& training,
                                               const ClusterSpec& cluster,
                                               const PlacementRules& rules,
                                               const ParallelDims& dims);

  // For the planner, which has already called CheckRules and found kValid.
  static ParallelConfig FromCheckedDims(const ParallelDims& dims) { return ParallelConfig(dims); }

  const ParallelDims& dims() const { return dims_; }
  int64_t dp() const { return dims_.dp; }
  int64_t tp() const { return dims_.tp; }
  int64_t pp() const { return dims_.pp; }
  int64_t cp() const { return dims_.cp; }
  int64_t micro_batch() const { return dims_.micro_batch; }
  int64_t virtual_pipeline() const { return dims_.virtual_pipeline; }
  bool sequence_parallel() const { return dims_.sequence_parallel; }
  Recompute recompute() const { return dims_.recompute; }
  int64_t ep() const { return dims_.ep; }
  // Resolved: tp where dims().etp is 0.
  int64_t etp() const { return ExpertTensorParallel(dims_); }
  DataParallelSharding dp_sharding() const { return dims_.dp_sharding; }
  // DataParallelShardRanks: the data-parallel ranks a replica's sharded states are spread over.
  int64_t dp_shard_ranks() const { return DataParallelShardRanks(dims_); }

  // Micro-batches per step m = global batch / (dp x b).
  int64_t NumMicroBatches(const TrainingSpec& training) const {
    return training.global_batch_size() / (dims_.dp * dims_.micro_batch);
  }

  // "dp2 tp2 pp1 cp1 mbs1" (with " vp2", " ep4", " etp1", " recompute=full",
  // " dp_sharding=full", " dp_shard_group=8" where not the default), for tables and logs.
  std::string ToString() const;

 private:
  explicit ParallelConfig(const ParallelDims& dims) : dims_(dims) {}

  ParallelDims dims_;
};

}  // namespace paratune

#endif  // PARATUNE_ESTIMATOR_PARALLEL_CONFIG_H_
