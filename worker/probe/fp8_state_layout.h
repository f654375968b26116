// Where a rank's fp8 state lives, as Transformer Engine keeps it for the four linear layers of
// each transformer layer (QKV, attention output projection, gate/up, down) when Megatron-LM
// trains in fp8: an fp8 copy of every linear weight and its fp8 transpose, cast once per step
// (the memory model's fp8_weight_copies term; with fp8 parameters, the transpose alone), and
// per linear the delayed-scaling state of its fp8 tensors (fp8_scaling_state): scale, scale
// inverse and amax history in fp32. The LM head, the embedding, the norms and attention stay
// bf16, as in Megatron-LM.
//
// The scaling state is grouped as Transformer Engine's amax reduction groups it: Megatron-LM
// wraps each model chunk's transformer block in one fp8_autocast, whose exit reduces and
// updates the forward tensors of every linear that ran in it, and the backward of that
// block's first linear the backward tensors (transformer_engine/pytorch/fp8.py,
// FP8GlobalStateManager.reduce_and_update_fp8_tensors; megatron/core/transformer/
// transformer_block.py). So each chunk has a forward group (E4M3, format HYBRID) and a
// backward group (E5M2), each one contiguous [history, tensors] amax history whose row 0 is
// the slot the current pass's casts write, one all-reduce long.
#ifndef PARATUNE_WORKER_PROBE_FP8_STATE_LAYOUT_H_
#define PARATUNE_WORKER_PROBE_FP8_STATE_LAYOUT_H_

#include <array>
#include <cstdint>
#include <vector>

#include "worker/probe/fp8_scaling.h"
#include "worker/probe/shard_shapes.h"

namespace paratune {

// A transformer layer's linears in the order they run forward.
enum class Fp8Linear { kQkv = 0, kAttentionOutput, kGateUp, kDown };
inline constexpr int kFp8LinearsPerLayer = 4;

// The fp8 tensors of one linear's scaling state, Transformer Engine's fp8_meta of a Linear
// (tex.FP8FwdTensors GEMM1_INPUT, GEMM1_WEIGHT, GEMM1_OUTPUT; tex.FP8BwdTensors GRAD_OUTPUT1,
// GRAD_INPUT1). The probe's casts measure the input, the weight and the output gradient; the
// output and the input gradient stay bf16 (as in Megatron-LM), so their amaxes stay zero and
// their scales 1, but their state exists as in Transformer Engine.
enum class Fp8ForwardTensor { kInput = 0, kWeight, kOutput };
inline constexpr int kFp8ForwardTensors = 3;
enum class Fp8BackwardTensor { kOutputGradient = 0, kInputGradient };
inline constexpr int kFp8BackwardTensors = 2;

// The linear's GEMM shape on this rank.
const LinearShape& LinearShapeOf(const ShardShapes& shapes, Fp8Linear linear);

// One reduction group's state in the scaling-state buffer (byte offsets, fp32 values).
struct Fp8ScalingGroup {
  Fp8Format format = Fp8Format::kE4M3;
  int64_t tensors = 0;
  int64_t tensors_per_linear = 0;
  int64_t scale = 0;  // [tensors]
  // [tensors], kFp8ScaleInverseStride floats apart: the GEMMs read them (ScaleInverse).
  int64_t scale_inverse = 0;
  int64_t amax_history = 0;  // [history_length, tensors]; row 0 is the current slot
  // The index of tensor `tensor` (Fp8ForwardTensor or Fp8BackwardTensor) of `linear` of the
  // chunk's layer `layer_in_chunk`.
  int64_t Index(int64_t layer_in_chunk, Fp8Linear linear, int tensor) const {
    return (layer_in_chunk * kFp8LinearsPerLayer + static_cast<int>(linear)) * tensors_per_linear +
           tensor;
  }
  // The byte offset of tensor `index`'s scale inverse.
  int64_t ScaleInverse(int64_t index) const {
    return scale_inverse + index * kFp8ScaleInverseAlignment;
  }
};

// A linear weight's fp8 copies in the weight-copy buffer (byte offsets): [outputs, inputs]
// E4M3 for the forward GEMM, [inputs, outputs] for the input-gradient GEMM (cuBLASLt's fp8
// GEMMs take only k-contiguous operands), and the fp32 inverse of the scale they were cast
// with, in a slot of kFp8ScaleInverseAlignment bytes (Transformer Engine's Float8Tensor keeps its
// own scale_inv: the weight's scale moves on at the end of the forward pass that cast it, while
// later micro-batches still read the copy). With fp8 parameters the weight itself is E4M3
// (ParameterLayout's fp8 regions): `weight` is -1, and the transpose and the scale inverse are
// those of the fp8 weight (Transformer Engine's Float8Tensor parameter with its transpose cache).
struct Fp8WeightCopy {
  int64_t weight = 0;
  int64_t transposed = 0;
  int64_t scale_inverse = 0;
};

struct Fp8StateLayout {
  // Whether the linear weights are stored in fp8 (training.fp8_param_gather).
  bool fp8_parameters = false;
  int64_t history_length = 0;
  // Per stage layer (ParameterLayout::layers' order), per Fp8Linear.
  std::vector<std::array<Fp8WeightCopy, kFp8LinearsPerLayer>> weights;
  int64_t weight_bytes = 0;
  // Per model chunk of the stage: the forward (E4M3) and backward (E5M2) groups; a chunk of
  // no layers has empty groups.
  std::vector<Fp8ScalingGroup> forward;
  std::vector<Fp8ScalingGroup> backward;
  int64_t scaling_bytes = 0;
};

// The fp8 state of `stage_layers` for `recipe`'s amax history, with the linear weights in
// fp8 (`fp8_parameters`) or bf16. Buffers start at multiples of 256 bytes.
Fp8StateLayout LayoutFp8State(const ShardShapes& shapes, const StageLayers& stage_layers,
                              const DelayedScalingRecipe& recipe, bool fp8_parameters);

}  // namespace paratune

#endif  // PARATUNE_WORKER_PROBE_FP8_STATE_LAYOUT_H_
