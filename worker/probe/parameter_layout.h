// Where each parameter tensor of a rank's pipeline stage sits in one flat buffer. The probe
// keeps weights (bf16), gradients (fp32 or bf16) and the optimizer's fp32 states in buffers
// of this layout, as Megatron-LM's distributed optimizer does, so that the data-parallel
// reduce-scatter and all-gather run once over the whole buffer and each rank's optimizer
// shard is one contiguous range.
//
// With fp8 parameters (Megatron-LM's --fp8-param-gather: Transformer Engine's fp8_model_init
// makes the four linear weights of each layer Float8Tensors) the weights buffer stores those
// linears in 1 byte (E4M3) and everything else in bf16. Megatron-LM then keeps one parameter
// buffer per parameter dtype in each model chunk's DistributedDataParallel (uint8 for a
// Float8Tensor's data; distributed_data_parallel.py, DistributedDataParallel.__init__ grouping
// the parameters by (param_dtype, grad_dtype); param_and_grad_buffer.py, partition_buckets'
// "at most one fp8 (uint8) buffer"), each bucketed on its own, so no bucket mixes the two
// widths and every shard of a bucket is the same number of bytes. The layout mirrors that:
// each chunk's tensors form a bf16 region and, with fp8 parameters, an fp8 region after it.
// Element offsets index the gradients and optimizer states (one element each, whatever the
// weight's dtype); WeightByte maps them into the weights buffer.
//
// A mixture-of-experts model's routed experts are sharded apart: Megatron-LM keeps expert
// parameters in buffers of their own, reduced and sharded over the expert data-parallel group
// (distributed_data_parallel.py, DistributedDataParallel.__init__: expert_parallel_params get
// _allocate_buffers_for_parameters over intra_expt_dp_group), while the router and the shared
// experts are dense parameters of the data x context group. The layout keeps the two apart as
// partitions: every dense region first, then each chunk's expert region, each partition padded
// to equal shards of its own group.
#ifndef PARATUNE_WORKER_PROBE_PARAMETER_LAYOUT_H_
#define PARATUNE_WORKER_PROBE_PARAMETER_LAYOUT_H_

#include <cstdint>
#include <vector>

#include "worker/probe/moe_shard_shapes.h"
#include "worker/probe/rank_layout.h"
#include "worker/probe/shard_shapes.h"

namespace paratune {

// Element offsets of one transformer layer's tensors (nn.Linear weights are [outputs,
// inputs], row-major; RMSNorm weights [h], whole on every tensor-parallel rank); -1 where the
// layer has no such tensor.
struct LayerParameterOffsets {
  int64_t attention_norm = 0;
  int64_t qkv = 0;
  int64_t attention_output = 0;
  int64_t mlp_norm = 0;
  // A dense layer's MLP; -1 in an MoE layer.
  int64_t gate_up = 0;
  int64_t down = 0;
  // An MoE layer's (MoeShardShapes), -1 in a dense layer: the router [E, h] and the shared
  // experts' fc1 and fc2 (-1 without shared experts) among the dense tensors, and each local
  // expert's fc1 [2 f_e / etp, h] and fc2 [h, f_e / etp], E / ep of each, in the chunk's expert
  // region (Transformer Engine's GroupedLinear keeps one weight per local expert).
  int64_t router = -1;
  int64_t shared_fc1 = -1;
  int64_t shared_fc2 = -1;
  std::vector<int64_t> expert_fc1;
  std::vector<int64_t> expert_fc2;

  bool moe() const { return router >= 0; }
};

// The tensors one group shards among its ranks with the distributed optimizer: the dense ones
// over the data x context group (under hybrid sharding over each of its shard groups, the
// shards replicated across them), a mixture-of-experts model's routed experts over the expert
// data-parallel group (RankGroup::kExpertData).
struct ParameterPartition {
  RankGroup group = RankGroup::kDataContext;
  // Elements [start, end) of the buffer, end padded to shard_count equal shards of
  // shard_elements each, a multiple of kParameterAlignment; empty for a dense model's experts.
  int64_t start = 0;
  int64_t end = 0;
  int64_t shard_count = 1;
  int64_t shard_elements = 0;
  // lcm(kParameterAlignment, shard_count): tensors start at start + a multiple of it, so any
  // run of whole tensors spans a multiple of the shard count and can be a data-parallel bucket
  // that reduce-scatters to equal shards (overlap_plan.h; Megatron-LM pads each bucket's end to
  // lcm(dp, 128) instead).
  int64_t tensor_alignment = 0;
  // Where a rank's shard of the partition keeps its optimizer states: element state_start of
  // the optimizer buffers (the dense partition's at 0, the experts' after it).
  int64_t state_start = 0;

  bool Contains(int64_t element) const { return element >= start && element < end; }
};

// A run [start, end) of elements holding whole tensors of one model chunk in one weight dtype,
// stored from byte `byte_start` of the weights buffer at `bytes_per_element` (2: bf16, 1: E4M3).
struct ParameterRegion {
  int64_t chunk = 0;
  bool fp8 = false;
  // The chunk's routed experts (ParameterLayout::experts), bf16.
  bool experts = false;
  int64_t start = 0;
  int64_t end = 0;
  int64_t byte_start = 0;
  int64_t bytes_per_element = 2;
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
  // The end of the last tensor.
  int64_t elements = 0;
  // The dense tensors, from 0, and the routed experts', from dense.end (empty, start = end =
  // dense.end, for a dense model).
  ParameterPartition dense;
  ParameterPartition experts;
  // The buffer's elements (experts.end) and a rank's optimizer shard of it (the two
  // partitions' shard_elements).
  int64_t padded_elements = 0;
  int64_t shard_elements = 0;
  // The regions in buffer order; they tile [0, padded_elements) (the last one of each
  // partition holds its end padding). One per chunk in bf16; with fp8 parameters a chunk with
  // layers has an fp8 region of its linear weights after its bf16 one; then, for an MoE model,
  // one expert region per chunk with MoE layers. Regions start at multiples of their
  // partition's tensor_alignment elements from its start and of kWeightRegionAlignment bytes.
  std::vector<ParameterRegion> regions;
  // Bytes of the weights buffer: the last region's end.
  int64_t weight_bytes = 0;

  // The region holding element `element` (< padded_elements).
  const ParameterRegion& RegionOf(int64_t element) const;
  // The byte offset in the weights buffer of the weight at element offset `element`.
  int64_t WeightByte(int64_t element) const;
  // The partition holding element `element` (< padded_elements).
  const ParameterPartition& PartitionOf(int64_t element) const {
    return experts.Contains(element) ? experts : dense;
  }
};

// Tensor starts are multiples of 128 elements (256 bytes in bf16, what cuBLASLt's fastest
// kernels want) and of the shard count.
inline constexpr int64_t kParameterAlignment = 128;

// Weight regions start at multiples of 256 bytes, cuBLASLt's preferred operand alignment.
inline constexpr int64_t kWeightRegionAlignment = 256;

// The layout of `stage_layers` on one rank. `shard_count` is the number of optimizer shards of
// the dense partition: data x context parallel with the distributed optimizer (its shard
// group's dp_shard x cp under hybrid sharding, RankLayout::DataShardGroup), 1 without.
// `fp8_parameters`: the dense layers' linear weights stored in E4M3 (training.fp8_param_gather).
// A dense model's layout.
ParameterLayout LayoutParameters(const ShardShapes& shapes, const StageLayers& stage_layers,
                                 bool tied_embeddings, int64_t shard_count, bool fp8_parameters);
// The same for a mixture-of-experts model whose MoE layers (StageLayers::moe_layers) have the
// block `moe`; `expert_shard_count` is the experts' optimizer shards: the expert data-parallel
// size with the distributed optimizer, 1 without. The experts stay bf16 (the probe refuses fp8
// on MoE layers: CheckCudaProbeRuns).
ParameterLayout LayoutParameters(const ShardShapes& shapes, const MoeShardShapes& moe,
                                 const StageLayers& stage_layers, bool tied_embeddings,
                                 int64_t shard_count, int64_t expert_shard_count,
                                 bool fp8_parameters);

}  // namespace paratune

#endif  // PARATUNE_WORKER_PROBE_PARAMETER_LAYOUT_H_
