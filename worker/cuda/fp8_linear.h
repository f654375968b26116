// The four linear layers of each transformer layer in fp8, as Transformer Engine's Linear and
// LayerNormLinear run them under Megatron-LM's fp8 training with the delayed-scaling recipe
// the export writes (kExportedFp8Recipe, format HYBRID):
// - weights cast to E4M3 with their transposes once per step, on each chunk's first forward
//   pass (Transformer Engine's is_first_microbatch), and reused by later micro-batches; with
//   fp8 parameters (--fp8-param-gather; fp8_parameters.h casts them in the optimizer step)
//   the weights are E4M3 already and only transposed then, as a Float8Tensor parameter fills
//   its transpose cache;
// - forward: the input cast to E4M3, its fp8 copy kept for the weight gradient (transposed,
//   or with sequence parallelism the rank's rows, all-gathered in fp8 for the GEMM and again
//   in the backward), out = in weight^T through cuBLASLt's fp8 GEMM with fast accumulation;
// - backward: the output gradient cast to E5M2 with its transpose, d_in = d_out weight and
//   d_weight += d_out^T in in fp8, two-level accumulation;
// - every cast records its tensor's amax; at the end of a chunk's forward pass (the exit of
//   Megatron-LM's fp8_autocast around the transformer block) its forward tensors' amaxes are
//   all-reduced (maximum) over the amax group and their scales updated, and at the end of its
//   backward pass (the backward of its first linear) its backward tensors'
//   (FP8GlobalStateManager.reduce_and_update_fp8_tensors).
// Outputs and input gradients stay bf16, as in Megatron-LM. With Megatron-LM's
// --tp-comm-overlap the sequence-parallel collectives run beside the fp8 GEMMs
// (tensor_parallel_overlap.h), as Transformer Engine's userbuffers run them in fp8: the
// column-parallel forward ring-gathers the rank's fp8 rows; the row-parallel forward
// reduce-scatters the bf16 output column chunk by column chunk; the row-parallel backward casts
// the rank's rows of the output gradient to E5M2 in place in the gathered buffer and
// ring-gathers them in fp8 (the cast before the gather, as TransformerEngineBaseModule's
// grad_output_preprocess in transformer_engine/pytorch/module/base.py casts into the
// userbuffer's local chunk), transposing the gathered gradient for the weight gradient
// (_Linear.backward's fp8_transpose, module/linear.py); the column-parallel backward gathers
// its fp8 input in bulk beside the input gradient and reduce-scatters that beside the weight
// gradient (LayerNormLinear's bulk dgrad/wgrad overlap, module/layernorm_linear.py).
// worker/probe/fp8_state_layout.h holds where the state lives; docs/probe.md what differs
// from Transformer Engine.
#ifndef PARATUNE_WORKER_CUDA_FP8_LINEAR_H_
#define PARATUNE_WORKER_CUDA_FP8_LINEAR_H_

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "worker/cuda/gemm.h"
#include "worker/cuda/phase_timer.h"
#include "worker/cuda/tensor_parallel_overlap.h"
#include "worker/probe/fp8_state_layout.h"
#include "worker/probe/shard_shapes.h"

namespace paratune {

// The device buffers of the fp8 linears (FootprintPlan's), borrowed.
struct Fp8LinearBuffers {
  char* weight_copies = nullptr;               // ProbeBuffer::kFp8WeightCopies
  char* scaling_state = nullptr;               // kFp8ScalingState
  void* input = nullptr;                       // kFp8Input
  void* input_transposed = nullptr;            // kFp8InputTransposed (sequence parallelism)
  void* output_gradient = nullptr;             // kFp8OutputGradient
  void* output_gradient_transposed = nullptr;  // kFp8OutputGradientTransposed
};

// One linear of one layer of a model chunk, and what its forward pass keeps for its backward.
struct Fp8LinearSite {
  int64_t chunk = 0;
  int64_t layer_in_chunk = 0;
  Fp8Linear linear = Fp8Linear::kQkv;
  // The weight [outputs, inputs]: bf16, cast on the chunk's first forward pass of a step, or
  // with fp8 parameters (Fp8StateLayout::fp8_parameters) E4M3 itself, whose scale inverse is
  // its Fp8WeightCopy's.
  const void* weight = nullptr;
  // The fp8 copy of the input (LayerActivationLayout: the QKV and gate/up inputs as the rank's
  // rows [R, h] with sequence parallelism, else every input transposed, [inputs, T]), and the
  // inverse of the scale it was cast with.
  void* kept = nullptr;
  float* kept_scale_inverse = nullptr;
};

// Not thread-safe: one per rank, enqueuing on the rank's compute stream.
class Fp8Linears {
 public:
  // `first_layer`: ParameterLayout::first_layer (a chunk's first stage layer). `tensor_group`
  // gathers sequence-parallel rows (nullptr without sequence parallelism); `amax_group`
  // reduces the amaxes (Fp8AmaxGroup; nullptr for a stage of one rank). Everything is
  // borrowed.
  Fp8Linears(const ShardShapes& shapes, const Fp8StateLayout& layout,
             std::vector<int64_t> first_layer, const Fp8LinearBuffers& buffers, Gemm* gemm,
             ncclComm_t tensor_group, ncclComm_t amax_group, const DelayedScalingRecipe& recipe,
             cudaStream_t stream, PhaseTimer* timer);
  Fp8Linears(const Fp8Linears&) = delete;
  Fp8Linears& operator=(const Fp8Linears&) = delete;

  // Transformer Engine's initial state: scales and their inverses 1, amax histories 0.
  // Synchronous: written on the rank's stream, which has finished when it returns. INTERNAL
  // as CudaStatus.
  absl::Status Initialize();

  // A new step: each chunk's next forward pass casts its weights again.
  void StartStep();

  // From now on the sequence-parallel collectives (tp > 1) run overlapped through `overlap`
  // (borrowed; its compute stream is this one's), as with --tp-comm-overlap: ColumnForward
  // ring-gathers its fp8 rows, and the *Overlapped methods below serve the other sites.
  void set_overlap(TensorParallelOverlap* overlap) { overlap_ = overlap; }

  // The forward pass of the QKV or gate/up linear from its input's rows on this rank,
  // `normed` [R, h] bf16 (the norm's output, not kept): keeps the fp8 copy at site.kept,
  // all-gathers it over the tensor group with sequence parallelism (overlapped: in a ring,
  // each rank's rows multiplied as they arrive, qkv_fprop / fc1_fprop), and computes
  // out [T, outputs] bf16.
  absl::Status ColumnForward(const Fp8LinearSite& site, const __nv_bfloat16* normed,
                             __nv_bfloat16* out);
  // The forward pass of the attention output or down projection from in [T, inputs] bf16:
  // keeps the fp8 transpose at site.kept and computes out [T, h] bf16, the partial sums
  // before the tensor-parallel reduction.
  absl::Status RowForward(const Fp8LinearSite& site, const __nv_bfloat16* in, __nv_bfloat16* out);
  // The backward pass of any of the four from d_out [T, outputs] bf16 (all-gathered already
  // for the row-parallel ones): d_in [T, inputs] bf16 (partial sums for the column-parallel
  // ones), and the weight's gradient accumulated into `weight_gradient` (fp32 or bf16).
  absl::Status Backward(const Fp8LinearSite& site, const __nv_bfloat16* d_out, __nv_bfloat16* d_in,
                        void* weight_gradient, bool fp32_gradient);
  // The backward pass of the attention output or down projection with sequence parallelism
  // and no overlap, from this rank's rows of the output gradient, d_out [R, h] bf16: cast to
  // E5M2 into their place of the gathered gradient, all-gathered over the tensor group in fp8
  // and transposed, as Transformer Engine's grad_output_preprocess gathers a row-parallel
  // linear's output gradient in fp8 (one byte per value where a bf16 gather before Backward
  // moves two); then Backward's products into d_in [T, inputs] and `weight_gradient`.
  // INVALID_ARGUMENT for a column-parallel site, FAILED_PRECONDITION without sequence
  // parallelism; NcclStatus's error otherwise.
  absl::Status RowBackwardSequenceParallel(const Fp8LinearSite& site, const __nv_bfloat16* d_out,
                                           __nv_bfloat16* d_in, void* weight_gradient,
                                           bool fp32_gradient);

  // With the overlap (set_overlap; FAILED_PRECONDITION without), the sites whose collectives
  // RowForward and Backward leave to the caller:
  // RowForward whose partial sums are reduce-scattered column chunk by column chunk beside the
  // GEMM (proj_fprop / fc2_fprop): `partial` [T, h] the sums, `reduced` (R x h) the chunks'
  // reductions, `out` [R, h] the reduced rows (GemmReduceScatter).
  absl::Status RowForwardOverlapped(const Fp8LinearSite& site, const __nv_bfloat16* in,
                                    __nv_bfloat16* partial, __nv_bfloat16* reduced,
                                    __nv_bfloat16* out);
  // Backward of the QKV or gate/up linear from d_out [T, outputs] bf16, its fp8 input gathered
  // again beside the input gradient `partial` [T, h] and that reduce-scattered into
  // `reduced` [R, h] beside the weight gradient (qkv/fc1 dgrad and wgrad, bulk).
  absl::Status ColumnBackwardOverlapped(const Fp8LinearSite& site, const __nv_bfloat16* d_out,
                                        __nv_bfloat16* partial, __nv_bfloat16* reduced,
                                        void* weight_gradient, bool fp32_gradient);
  // Backward of the attention output or down projection from this rank's rows of the output
  // gradient, d_out [R, h] bf16: cast to E5M2, ring-gathered in fp8 beside the input
  // gradient's chunks into d_in [T, inputs] (proj_dgrad / fc2_dgrad), then transposed for the
  // weight gradient.
  absl::Status RowBackwardOverlapped(const Fp8LinearSite& site, const __nv_bfloat16* d_out,
                                     __nv_bfloat16* d_in, void* weight_gradient,
                                     bool fp32_gradient);

  // The end of a chunk's forward (backward) pass: its forward (backward) tensors' amaxes
  // all-reduced over the amax group and their scales and amax windows updated. Not after a
  // recomputed forward pass (Transformer Engine leaves the recompute phase's scaling alone).
  absl::Status EndForward(int64_t chunk);
  absl::Status EndBackward(int64_t chunk);

 private:
  // The fp32 value at `offset` of the scaling state, indexed.
  float* Scaling(int64_t offset, int64_t index = 0) const;
  const Fp8WeightCopy& CopyOf(const Fp8LinearSite& site) const;
  // Casts the site's weight (with fp8 parameters: transposes it) if the chunk's weights are
  // not cast yet this step.
  absl::Status CastWeight(const Fp8LinearSite& site);
  // Casts a bf16 input with the site's input scale, recording its amax and keeping the
  // scale's inverse at site.kept_scale_inverse.
  absl::Status CastInput(const Fp8LinearSite& site, const __nv_bfloat16* in, int64_t rows,
                         int64_t columns, void* out, void* out_transposed);
  // The output gradient [rows, outputs] cast to E5M2 with the site's scale, recording its
  // amax; either output may be null.
  absl::Status CastOutputGradient(const Fp8LinearSite& site, const __nv_bfloat16* d_out,
                                  int64_t rows, void* out, void* out_transposed);
  // The site's three fp8 products over the whole T rows: the forward from kFp8Input, the input
  // gradient from kFp8OutputGradient, the weight gradient from kFp8OutputGradientTransposed and
  // `in_t` (the input transposed, [inputs, T]).
  Fp8GemmArgs ForwardProduct(const Fp8LinearSite& site, __nv_bfloat16* out) const;
  Fp8GemmArgs InputGradientProduct(const Fp8LinearSite& site, __nv_bfloat16* d_in) const;
  Fp8GemmArgs WeightGradientProduct(const Fp8LinearSite& site, const void* in_t,
                                    void* weight_gradient, bool fp32_gradient) const;
  // The weight gradient of a row-parallel site from its output gradient gathered in
  // buffers_.output_gradient (E5M2, [rows, outputs]): transposed (cuBLASLt's fp8 GEMMs are
  // TN only), then multiplied with the kept input.
  absl::Status GatheredWeightGradient(const Fp8LinearSite& site, void* weight_gradient,
                                      bool fp32_gradient);
  absl::Status RequireOverlap() const;
  absl::Status EndPass(const Fp8ScalingGroup& group);
  absl::Status Mark(ProbePhase phase) { return timer_->Mark(phase); }

  const ShardShapes& shapes_;
  const Fp8StateLayout& layout_;
  std::vector<int64_t> first_layer_;
  Fp8LinearBuffers buffers_;
  Gemm* gemm_;
  ncclComm_t tensor_group_;
  ncclComm_t amax_group_;
  DelayedScalingRecipe recipe_;
  cudaStream_t stream_;
  PhaseTimer* timer_;
  TensorParallelOverlap* overlap_ = nullptr;
  // Per chunk: whether its weights are cast this step.
  std::vector<bool> weights_cast_;
};

}  // namespace paratune

#endif  // PARATUNE_WORKER_CUDA_FP8_LINEAR_H_
