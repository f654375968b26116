// What a rank keeps from a forward pass for the backward pass, as byte offsets: per
// transformer layer, and for the loss at the end of the last stage. These are the tensors of
// the memory model's activation terms (Fujii et al. 2024, arXiv 2411.06465: with
// FlashAttention, sequence parallelism and GQA a layer keeps s b h (12 + 4k/a + 8f/h) / (t c)
// bytes); footprint_plan.h compares the two.
#ifndef PARATUNE_WORKER_PROBE_ACTIVATION_LAYOUT_H_
#define PARATUNE_WORKER_PROBE_ACTIVATION_LAYOUT_H_

#include <cstdint>

#include "worker/probe/shard_shapes.h"

namespace paratune {

// One layer's kept tensors, byte offsets inside its block. Shapes (T tokens of the
// micro-batch on this context rank, R = residual_tokens rows, d head dim):
struct LayerActivationLayout {
  int64_t input = 0;                  // [R, h] bf16: the layer's input (the residual stream)
  int64_t attention_norm_output = 0;  // [R, h] bf16: RMSNorm 1's output, QKV's input
  int64_t attention_norm_rstd = 0;    // [R] fp32: 1 / RMS of each input row
  // [b, kv_heads, s/c, query_heads / kv_heads, d] bf16: queries after the rotary embedding,
  // grouped by the kv head they attend with.
  int64_t query = 0;
  // [2, b, kv_heads, s/c, d] bf16: keys (after the rotary embedding), then values.
  int64_t key_value = 0;
  int64_t attention_output = 0;  // [T, query_heads d] bf16: the output projection's input
  int64_t softmax_lse = 0;       // [b, kv_heads, s/c, query_heads / kv_heads] fp32
  int64_t mlp_input = 0;         // [R, h] bf16: the residual stream after attention
  int64_t mlp_norm_output = 0;   // [R, h] bf16: RMSNorm 2's output
  int64_t mlp_norm_rstd = 0;     // [R] fp32
  int64_t gate_up = 0;           // [T, 2 f/t] bf16: gate and up projections
  int64_t swiglu_output = 0;     // [T, f/t] bf16: the down projection's input
  int64_t bytes = 0;             // the whole block
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

// Tensors start at multiples of 256 bytes, the alignment cuBLASLt's fastest kernels want.
inline constexpr int64_t kActivationAlignment = 256;

LayerActivationLayout LayoutLayerActivations(const ShardShapes& shapes);
LossActivationLayout LayoutLossActivations(const ShardShapes& shapes);

// Bytes of one layer's input alone, what full recomputation keeps per layer, aligned.
int64_t LayerInputBytes(const ShardShapes& shapes);

}  // namespace paratune

#endif  // PARATUNE_WORKER_PROBE_ACTIVATION_LAYOUT_H_
