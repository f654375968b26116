// What a rank keeps from a forward pass for the backward pass, as byte offsets: per
// transformer layer, and for the loss at the end of the last stage. These are the tensors of
// the memory model's activation terms (Fujii et al. 2024, arXiv 2411.06465: with
// FlashAttention, sequence parallelism and GQA a layer keeps s b h (12 + 4k/a + 8f/h) / (t c)
// bytes); footprint_plan.h compares the two.
#ifndef PARATUNE_WORKER_PROBE_ACTIVATION_LAYOUT_H_
#define PARATUNE_WORKER_PROBE_ACTIVATION_LAYOUT_H_

#include <cstdint>

#include "worker/probe/moe_shard_shapes.h"
#include "worker/probe/shard_shapes.h"

namespace paratune {

// One layer's kept tensors, byte offsets inside its block. Shapes (T tokens of the
// micro-batch on this context rank, R = residual_tokens rows, d head dim):
//
// In fp8 training the four linears' inputs are kept as Transformer Engine keeps them for the
// weight-gradient GEMM, 1 byte per value (E4M3; the memory model's
// Fp8SavedInputSavingsBytes): the norms' outputs and the SwiGLU output in fp8 alone (RMSNorm's
// backward reads its input and 1/RMS, SwiGLU's its input, so nothing else needs their bf16
// values), the attention output twice, bf16 for the attention backward and fp8 for the output
// projection's weight gradient (Megatron-LM's core attention saves its bf16 output, the
// projection its own fp8 input). The fp8 copies are cast with the step's scales, whose
// inverses are kept beside them.
struct LayerActivationLayout {
  bool fp8 = false;
  int64_t input = 0;  // [R, h] bf16: the layer's input (the residual stream)
  // RMSNorm 1's output, QKV's input: [R, h] bf16; in fp8 [R, h] E4M3 with sequence
  // parallelism (the rank's rows, all-gathered again for the backward), else its transpose
  // [h, T] E4M3, the weight-gradient GEMM's operand.
  int64_t attention_norm_output = 0;
  int64_t attention_norm_rstd = 0;  // [R] fp32: 1 / RMS of each input row
  // [b, kv_heads, s/c, query_heads / kv_heads, d] bf16: queries after the rotary embedding,
  // grouped by the kv head they attend with.
  int64_t query = 0;
  // [2, b, kv_heads, s/c, d] bf16: keys (after the rotary embedding), then values.
  int64_t key_value = 0;
  int64_t attention_output = 0;  // [T, query_heads d] bf16: the output projection's input
  int64_t softmax_lse = 0;       // [b, kv_heads, s/c, query_heads / kv_heads] fp32
  int64_t mlp_input = 0;         // [R, h] bf16: the residual stream after attention
  int64_t mlp_norm_output = 0;   // RMSNorm 2's output: as attention_norm_output
  int64_t mlp_norm_rstd = 0;     // [R] fp32
  int64_t gate_up = 0;           // [T, 2 f/t] bf16: gate and up projections
  // The down projection's input: [T, f/t] bf16; in fp8 its transpose [f/t, T] E4M3.
  int64_t swiglu_output = 0;
  // fp8 only (empty in bf16): [query_heads d, T] E4M3, the attention output's transpose, and
  // [4] fp32 kFp8ScaleInverseStride apart, the inverse scales the four kept fp8 inputs were
  // cast with (Fp8Linear order), which the weight-gradient GEMMs read.
  int64_t attention_output_fp8 = 0;
  int64_t fp8_scale_inverses = 0;
  // A mixture-of-experts layer's MoE block (MoeBlockActivationLayout, its offsets from
  // moe_block), in place of the dense MLP's gate_up and swiglu_output, which are then empty;
  // -1 in a dense layer.
  int64_t moe_block = -1;
  int64_t bytes = 0;  // the whole block
};
// What the loss chunk keeps: the final RMSNorm's input and output and the fp32 logits whose
// gradient the cross-entropy computes (the memory model's output-activation term,
// 4 s b h (1 + V/h) / (t c)).
struct LossActivationLayout {
  int64_t input = 0;        // [R, h] bf16
  int64_t norm_output = 0;  // [R, h] bf16
  int64_t norm_rstd = 0;    // [R] fp32
  int64_t logits = 0;       // [T, ceil(V/t)] fp32
  int64_t bytes = 0;
};

// What a mixture-of-experts layer keeps for its backward pass in place of the dense MLP's
// gate_up and swiglu_output, byte offsets inside its own block, in bf16 training; the layer's
// other tensors are LayerActivationLayout's, mlp_norm_output among them, which the router and
// the shared experts read. Shapes (moe_shard_shapes.h: R routed rows, k, E, N copies the
// rank's experts compute, f_e / etp, shared n_s f_s / t):
struct MoeBlockActivationLayout {
  int64_t router_logits = 0;         // [R, E] bf16: the router GEMM's output
  int64_t router_probabilities = 0;  // [R, k] fp32: the top-k's probabilities
  int64_t router_indices = 0;        // [R, k] int32: their experts
  // [N, h] bf16: the received copies sorted by local expert, the grouped fc1's input.
  int64_t expert_input = 0;
  int64_t expert_probabilities = 0;  // [N] fp32: their routing probabilities, sorted alike
  int64_t expert_gate_up = 0;        // [N, 2 f_e / etp] bf16: fc1's output
  int64_t expert_swiglu_output = 0;  // [N, f_e / etp] bf16: the weighted SwiGLU's, fc2's input
  int64_t shared_gate_up = 0;        // [T, 2 n_s f_s / t] bf16; empty without shared experts
  int64_t shared_swiglu_output = 0;  // [T, n_s f_s / t] bf16
  int64_t bytes = 0;                 // the whole block
};

// Tensors start at multiples of 256 bytes, the alignment cuBLASLt's fastest kernels want.
inline constexpr int64_t kActivationAlignment = 256;

// The layer block of `shapes`, in fp8 training when `fp8`.
LayerActivationLayout LayoutLayerActivations(const ShardShapes& shapes, bool fp8);
// The block of a mixture-of-experts layer of `shapes` whose experts are `moe`, in bf16: the
// dense layer's tensors but its MLP's, then the MoE block.
LayerActivationLayout LayoutMoeLayerActivations(const ShardShapes& shapes,
                                                const MoeShardShapes& moe);
LossActivationLayout LayoutLossActivations(const ShardShapes& shapes);
// The MoE block of `shapes` whose experts are `moe` (ComputeMoeShardShapes), in bf16.
MoeBlockActivationLayout LayoutMoeBlockActivations(const ShardShapes& shapes,
                                                   const MoeShardShapes& moe);

// Bytes of one layer's input alone, what full recomputation keeps per layer, aligned.
int64_t LayerInputBytes(const ShardShapes& shapes);

}  // namespace paratune

#endif  // PARATUNE_WORKER_PROBE_ACTIVATION_LAYOUT_H_
