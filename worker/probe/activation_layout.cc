#include "worker/probe/activation_layout.h"

#include "worker/probe/fp8_scaling.h"

namespace paratune {
namespace {

constexpr int64_t kBf16 = 2;
constexpr int64_t kFp32 = 4;
constexpr int64_t kFp8 = 1;
// The four linears' inputs.
constexpr int64_t kFp8SavedInputs = 4;

// Appends a tensor of `bytes` to a block of `*end` bytes and returns its offset.
int64_t Place(int64_t* end, int64_t bytes) {
  const int64_t offset = *end;
  *end = (offset + bytes + kActivationAlignment - 1) / kActivationAlignment * kActivationAlignment;
  return offset;
}

// The layer's tensors but, without `dense_mlp`, the MLP's, placed from `*end`.
LayerActivationLayout LayoutLayer(const ShardShapes& x, bool fp8, bool dense_mlp, int64_t* end) {
  const int64_t residual = x.residual_tokens * x.hidden * kBf16;
  // What a linear keeps of its input, per value.
  const int64_t linear_input = fp8 ? kFp8 : kBf16;
  const int64_t attention_output = x.tokens * x.query_heads * x.head_dim;
  LayerActivationLayout layout;
  layout.fp8 = fp8;
  layout.input = Place(end, residual);
  layout.attention_norm_output = Place(end, x.residual_tokens * x.hidden * linear_input);
  layout.attention_norm_rstd = Place(end, x.residual_tokens * kFp32);
  layout.query = Place(end, x.tokens * x.query_heads * x.head_dim * kBf16);
  layout.key_value = Place(end, 2 * x.tokens * x.kv_heads * x.head_dim * kBf16);
  layout.attention_output = Place(end, attention_output * kBf16);
  layout.softmax_lse = Place(end, x.tokens * x.query_heads * kFp32);
  layout.mlp_input = Place(end, residual);
  layout.mlp_norm_output = Place(end, x.residual_tokens * x.hidden * linear_input);
  layout.mlp_norm_rstd = Place(end, x.residual_tokens * kFp32);
  const int64_t mlp_tokens = dense_mlp ? x.tokens : 0;
  layout.gate_up = Place(end, mlp_tokens * x.gate_up.outputs * kBf16);
  layout.swiglu_output = Place(end, mlp_tokens * x.ffn * linear_input);
  layout.attention_output_fp8 = Place(end, fp8 ? attention_output * kFp8 : 0);
  layout.fp8_scale_inverses = Place(end, fp8 ? kFp8SavedInputs * kFp8ScaleInverseAlignment : 0);
  return layout;
}

}  // namespace

LayerActivationLayout LayoutLayerActivations(const ShardShapes& x, bool fp8) {
  int64_t end = 0;
  LayerActivationLayout layout = LayoutLayer(x, fp8, /*dense_mlp=*/true, &end);
  layout.bytes = end;
  return layout;
}

LayerActivationLayout LayoutMoeLayerActivations(const ShardShapes& x, const MoeShardShapes& moe) {
  int64_t end = 0;
  LayerActivationLayout layout = LayoutLayer(x, /*fp8=*/false, /*dense_mlp=*/false, &end);
  layout.moe_block = Place(&end, LayoutMoeBlockActivations(x, moe).bytes);
  layout.bytes = end;
  return layout;
}

LossActivationLayout LayoutLossActivations(const ShardShapes& x) {
  const int64_t residual = x.residual_tokens * x.hidden * kBf16;
  LossActivationLayout layout;
  int64_t end = 0;
  layout.input = Place(&end, residual);
  layout.norm_output = Place(&end, residual);
  layout.norm_rstd = Place(&end, x.residual_tokens * kFp32);
  layout.logits = Place(&end, x.tokens * x.vocab * kFp32);
  layout.bytes = end;
  return layout;
}

MoeBlockActivationLayout LayoutMoeBlockActivations(const ShardShapes& x,
                                                   const MoeShardShapes& moe) {
  constexpr int64_t kInt32 = 4;
  const int64_t routed = moe.routed_tokens;
  const int64_t received = moe.received_copies;
  MoeBlockActivationLayout layout;
  int64_t end = 0;
  layout.router_logits = Place(&end, routed * moe.experts * kBf16);
  layout.router_probabilities = Place(&end, routed * moe.top_k * kFp32);
  layout.router_indices = Place(&end, routed * moe.top_k * kInt32);
  layout.expert_input = Place(&end, received * x.hidden * kBf16);
  layout.expert_probabilities = Place(&end, received * kFp32);
  layout.expert_gate_up = Place(&end, received * moe.expert_fc1.outputs * kBf16);
  layout.expert_swiglu_output = Place(&end, received * moe.expert_ffn * kBf16);
  layout.shared_gate_up = Place(&end, moe.shared_fc1.rows * moe.shared_fc1.outputs * kBf16);
  layout.shared_swiglu_output = Place(&end, moe.shared_fc1.rows * moe.shared_ffn * kBf16);
  layout.bytes = end;
  return layout;
}

int64_t LayerInputBytes(const ShardShapes& x) {
  int64_t end = 0;
  Place(&end, x.residual_tokens * x.hidden * kBf16);
  return end;
}

}  // namespace paratune
