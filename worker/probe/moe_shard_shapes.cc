#include "worker/probe/moe_shard_shapes.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace paratune {
namespace {

constexpr int64_t kBf16Bytes = 2;
constexpr int64_t kFp32Bytes = 4;

}  // namespace

double MoeShardShapes::ForwardFlops() const {
  return router.ForwardFlops() +
         static_cast<double>(local_experts) *
             (expert_fc1.ForwardFlops() + expert_fc2.ForwardFlops()) +
         shared_fc1.ForwardFlops() + shared_fc2.ForwardFlops();
}

int64_t MoeShardShapes::ExpertWeightElements() const {
  return local_experts * (expert_fc1.WeightElements() + expert_fc2.WeightElements());
}

int64_t MoeShardShapes::SharedWeightElements() const {
  return shared_fc1.WeightElements() + shared_fc2.WeightElements();
}

absl::StatusOr<MoeShardShapes> ComputeMoeShardShapes(const ModelSpec& model,
                                                     const TrainingSpec& training,
                                                     const ParallelConfig& config,
                                                     const ShardShapes& shapes) {
  const MoeDimensions& dims = model.moe();
  MoeShardShapes x;
  x.experts = dims.num_experts;
  x.top_k = dims.router_top_k;
  x.expert_parallel = config.ep();
  x.expert_tensor_parallel = config.etp();
  x.local_experts = x.experts / x.expert_parallel;
  x.routed_tokens = shapes.residual_tokens;
  const int64_t copies = x.routed_tokens * x.top_k;
  if (copies % x.experts != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the routed token copies per rank (", x.routed_tokens, " tokens x top-", x.top_k, " = ",
        copies, ") are not a multiple of model.moe.num_experts (", x.experts,
        "): the probe's balanced routing gives every expert the same count"));
  }
  x.expert_capacity = copies / x.experts;
  const double capacity_factor = training.moe_capacity_factor();
  if (capacity_factor > 0) {
    // get_capacity's ceil((num_tokens / num_experts) * capacity_factor), in the estimator's
    // order of operations (moe_memory.cc ExpertCapacity) so that both round alike.
    x.expert_capacity = static_cast<int64_t>(
        std::ceil(static_cast<double>(x.routed_tokens) * static_cast<double>(x.top_k) *
                  capacity_factor / static_cast<double>(x.experts)));
    if (x.expert_capacity > x.routed_tokens) {
      return absl::InvalidArgumentError(absl::StrCat(
          "training.moe_capacity_factor (", capacity_factor, ") gives each expert a capacity of ",
          x.expert_capacity, " copies per rank, more than the rank's ", x.routed_tokens,
          " routed tokens: Megatron-Core's apply_router_token_dropping then routes every token "
          "to every expert, which the probe's padded dispatch does not run"));
    }
  }
  x.routed_copies = x.experts * x.expert_capacity;
  x.copies_per_peer = x.routed_copies / x.expert_parallel;
  x.received_copies = x.routed_copies * x.expert_tensor_parallel;
  x.copies_per_local_expert = x.received_copies / x.local_experts;
  x.expert_ffn = dims.expert_ffn_hidden_size / x.expert_tensor_parallel;
  const int64_t h = shapes.hidden;
  const int64_t gate_factor = model.gated_mlp() ? 2 : 1;
  x.router = {x.routed_tokens, x.experts, h};
  x.expert_fc1 = {x.copies_per_local_expert, gate_factor * x.expert_ffn, h};
  x.expert_fc2 = {x.copies_per_local_expert, h, x.expert_ffn};
  x.shared_ffn =
      dims.num_shared_experts * dims.shared_expert_ffn_hidden_size / shapes.tensor_parallel;
  if (x.shared_ffn > 0) {
    x.shared_fc1 = {shapes.tokens, gate_factor * x.shared_ffn, h};
    x.shared_fc2 = {shapes.tokens, h, x.shared_ffn};
  }
  return x;
}

int64_t DispatchTokenBytes(const MoeShardShapes& moe, const ShardShapes& shapes) {
  return moe.routed_copies * shapes.hidden * kBf16Bytes;
}

int64_t DispatchProbabilityBytes(const MoeShardShapes& moe) {
  return moe.routed_copies * kFp32Bytes;
}

int64_t ExpertTensorGatherBytes(const MoeShardShapes& moe, const ShardShapes& shapes) {
  if (moe.expert_tensor_parallel == 1) return 0;
  return moe.received_copies * shapes.hidden * kBf16Bytes;
}

}  // namespace paratune
