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

// A run [start, end) of elements holding whole tensors of one model chunk in one weight dtype,
// stored from byte `byte_start` of the weights buffer at `bytes_per_element` (2: bf16, 1: E4M3).
struct ParameterRegion {
  int64_t chunk = 0;
  bool fp8 = false;
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
  // Elements of the stage's tensors, each starting at a multiple of tensor_alignment.
  int64_t elements = 0;
  // lcm(kParameterAlignment, shard_count): any run of whole tensors then spans a multiple of
  // the shard count, so that it can be a data-parallel bucket that reduce-scatters to equal
  // shards (overlap_plan.h; Megatron-LM pads each bucket's end to lcm(dp, 128) instead).
  int64_t tensor_alignment = 0;
  // `elements` rounded up to shard_count equal shards of a multiple of kParameterAlignment.
  int64_t padded_elements = 0;
  int64_t shard_elements = 0;
  // The regions in buffer order; they tile [0, padded_elements) (the last one holds the end
  // padding). One per chunk in bf16; with fp8 parameters a chunk with layers has an fp8 region
  // of its linear weights after its bf16 one. Regions start at multiples of tensor_alignment
  // elements and of kWeightRegionAlignment bytes.
  std::vector<ParameterRegion> regions;
  // Bytes of the weights buffer: the last region's end.
  int64_t weight_bytes = 0;

  // The region holding element `element` (< padded_elements).
  const ParameterRegion& RegionOf(int64_t element) const;
  // The byte offset in the weights buffer of the weight at element offset `element`.
  int64_t WeightByte(int64_t element) const;
};

// Tensor starts are multiples of 128 elements (256 bytes in bf16, what cuBLASLt's fastest
// kernels want) and of the shard count.
inline constexpr int64_t kParameterAlignment = 128;

// Weight regions start at multiples of 256 bytes, cuBLASLt's preferred operand alignment.
inline constexpr int64_t kWeightRegionAlignment = 256;

// The layout of `stage_layers` on one rank. `shard_count` is the number of optimizer shards:
// data x context parallel with the distributed optimizer, 1 without. `fp8_parameters`:
// the linear weights stored in E4M3 (training.fp8_param_gather).
ParameterLayout LayoutParameters(const ShardShapes& shapes, const StageLayers& stage_layers,
                                 bool tied_embeddings, int64_t shard_count, bool fp8_parameters);

}  // namespace paratune

#endif  // PARATUNE_WORKER_PROBE_PARAMETER_LAYOUT_H_
