// Which fp8 linear weights a range of the parameter buffer holds. With fp8 parameters
// (Megatron-LM's --fp8-param-gather) the optimizer step casts each rank's shard of the fp32
// master weights into the fp8 weights tensor by tensor, each with its own scale and amax, as
// Transformer Engine's cast_master_weights_to_fp8 does for delayed scaling
// (transformer_engine/pytorch/tensor/utils.py, _cast_master_weights_to_fp8_delayed_scaling:
// one quantizer update per parameter over the part of it the rank's master shard covers).
// A shard starts and ends wherever the bucket's equal split puts it, so it may hold the tail of
// one weight, some whole weights and the head of another.
#ifndef PARATUNE_WORKER_PROBE_FP8_WEIGHT_RANGES_H_
#define PARATUNE_WORKER_PROBE_FP8_WEIGHT_RANGES_H_

#include <cstdint>
#include <vector>

#include "worker/probe/fp8_state_layout.h"
#include "worker/probe/parameter_layout.h"
#include "worker/probe/shard_shapes.h"

namespace paratune {

// The part [start, start + count) (element offsets, ParameterLayout) of one linear weight of
// layer `layer_in_chunk` of model chunk `chunk`.
struct Fp8WeightRange {
  int64_t chunk = 0;
  int64_t layer_in_chunk = 0;
  Fp8Linear linear = Fp8Linear::kQkv;
  int64_t start = 0;
  int64_t count = 0;
};

// The parts of the fp8 linear weights of `parameters` (LayoutParameters of `shapes`) that lie
// in [start, end), in buffer order; empty without fp8 parameters.
std::vector<Fp8WeightRange> Fp8WeightRangesIn(const ParameterLayout& parameters,
                                              const ShardShapes& shapes, int64_t start,
                                              int64_t end);

}  // namespace paratune

#endif  // PARATUNE_WORKER_PROBE_FP8_WEIGHT_RANGES_H_
