// How a data-parallel replica's model states are spread over its data-parallel ranks: the
// ZeRO stages (Rajbhandari et al. 2020, arXiv 1910.02054) as the frameworks name them.
#ifndef PARATUNE_ESTIMATOR_DATA_PARALLEL_SHARDING_H_
#define PARATUNE_ESTIMATOR_DATA_PARALLEL_SHARDING_H_

#include <optional>

#include "absl/strings/string_view.h"

namespace paratune {

enum class DataParallelSharding {
  // Plain data parallelism (PyTorch DDP, Megatron-LM without --use-distributed-optimizer):
  // every rank holds all of its stage's weights, gradients and optimizer states, and the
  // gradients are all-reduced.
  kNone,
  // ZeRO-1: the optimizer states sharded (Megatron-LM's distributed optimizer, the default).
  kOptimizer,
  // ZeRO-2: the gradients sharded too, reduce-scattered as they are produced
  // (Megatron-FSDP optim_grads; FSDP2 without resharding after forward).
  kGradients,
  // ZeRO-3 / FSDP: the weights sharded as well, each layer's all-gathered before its forward
  // and backward (PyTorch FSDP2, Megatron-FSDP optim_grads_params).
  kFull,
};

// "none", "optimizer", "gradients", "full": the values --dp_sharding takes.
const char* DataParallelShardingName(DataParallelSharding sharding);

// The mode DataParallelShardingName names, or nullopt.
std::optional<DataParallelSharding> DataParallelShardingNamed(absl::string_view name);

// Whether the optimizer states are sharded: every mode but kNone.
inline bool ShardsOptimizerStates(DataParallelSharding sharding) {
  return sharding != DataParallelSharding::kNone;
}
// Whether the gradients are sharded: kGradients and kFull.
inline bool ShardsGradients(DataParallelSharding sharding) {
  return sharding == DataParallelSharding::kGradients || sharding == DataParallelSharding::kFull;
}
// Whether the weights are sharded: kFull.
inline bool ShardsWeights(DataParallelSharding sharding) {
  return sharding == DataParallelSharding::kFull;
}

}  // namespace paratune

#endif  // PARATUNE_ESTIMATOR_DATA_PARALLEL_SHARDING_H_
