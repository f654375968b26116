// Where each parameter tensor of a rank's pipeline stage sits in one flat buffer. The probe
// keeps weights (bf16), gradients (fp32 or bf16) and the optimizer's fp32 states in buffers
// of this layout, as Megatron-LM's distributed optimizer does, so that the data-parallel
// reduce-scatter and all-gather run once over the whole buffer and each rank's optimizer
// shard is one contiguous range.
#ifndef PARATUNE_WORKER_PROBE_PARAMETER_LAYOUT_H_
#define PARATUNE_WORKER_PROBE_PARAMETER_LAYOUT_H_

#include <cstdint>
#include <vector>

#include "worker/probe/shard_shapes.h"

namespace paratune {

// Element offsets of one transformer layer's tensors (nn.Linear weights are [outputs,
// inputs], row-major; RMSNorm weights [h], whole on every tensor-parallel rank).
struct LayerParameterOffsets {
  int64_t attention_norm = 0;
  int64_t qkv = 0;
  int64_t attention_output = 0;
  int64_t mlp_norm = 0;
  int64_t gate_up = 0;
  int64_t down = 0;
};

struct ParameterLayout {
  // The stage's layers, chunk after chunk; chunk c's first layer is layers[first_layer[c]].
  std::vector<LayerParameterOffsets> layers;
  std::vector<int64_t> first_layer;
  // The vocabulary shard [ceil(V/t), h] on stage 0, the final norm [h] and LM head on the last
  // stage; -1 where absent. A tied LM head is the embedding itself on a single stage.
  int64_t embedding = -1;
  int64_t final_norm = -1;
  int64_t lm_head = -1;
  // Elements of the stage's tensors, each starting at a multiple of tensor_alignment.
  int64_t elements = 0;
  // lcm(kParameterAlignment, shard_count): any run of whole tensors then spans a multiple of
  // the shard count, so that it can be a data-parallel bucket that reduce-scatters to equal
  // shards (overlap_plan.h; Megatron-LM pads each bucket's end to lcm(dp, 128) instead).
  int64_t tensor_alignment = 0;
  // `elements` rounded up to shard_count equal shards of a multiple of kParameterAlignment.
  int64_t padded_elements = 0;
  int64_t shard_elements = 0;
};

// Tensor starts are multiples of 128 elements (256 bytes in bf16, what cuBLASLt's fastest
// kernels want) and of the shard count.
inline constexpr int64_t kParameterAlignment = 128;

// The layout of `stage_layers` on one rank. `shard_count` is the number of optimizer shards:
// data x context parallel with the distributed optimizer, 1 without.
ParameterLayout LayoutParameters(const ShardShapes& shapes, const StageLayers& stage_layers,
                                 bool tied_embeddings, int64_t shard_count);

}  // namespace paratune

#endif  // PARATUNE_WORKER_PROBE_PARAMETER_LAYOUT_H_
