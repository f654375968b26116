#include "worker/cuda/attention.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "worker/cuda/communicators.h"
#include "worker/cuda/cuda_status.h"
#include "worker/cuda/fill_kernels.h"
#include "worker/probe/attention_graph.h"

namespace paratune {

Attention::Attention(Gemm* gemm, const ShardShapes& shapes, int64_t query_chunk, ncclComm_t context,
                     int64_t context_rank, cudaStream_t stream, PhaseTimer* timer)
    : gemm_(gemm),
      shapes_(shapes),
      query_chunk_(query_chunk),
      context_(context),
      stream_(stream),
      timer_(timer),
      scale_(1.0f / std::sqrt(static_cast<float>(shapes.head_dim))) {
  dims_.sequences = shapes.micro_batch;
  dims_.tokens_per_sequence = shapes.sequence_per_rank;
  dims_.kv_heads = shapes.kv_heads;
  dims_.heads_per_kv = shapes.QueryHeadsPerKvHead();
  dims_.head_dim = shapes.head_dim;
  positions_.sequence = shapes.sequence;
  positions_.context_parallel = shapes.context_parallel;
  positions_.context_rank = context_rank;
  kv_block_ = dims_.sequences * dims_.kv_heads * dims_.tokens_per_sequence * dims_.head_dim;
}

absl::Status Attention::SelectKernel(int64_t workspace_bytes) {
  using Plan = absl::StatusOr<std::unique_ptr<CudnnAttention>>;
  Plan forward = [&]() -> Plan {
    PT_ASSIGN_OR_RETURN(const AttentionGraph graph, CausalAttentionForwardGraph(shapes_));
    return CudnnAttention::Create(graph, workspace_bytes, stream_);
  }();
  Plan backward = [&]() -> Plan {
    PT_RETURN_IF_ERROR(CheckCudnnAttentionBackwardVersion(cudnnGetVersion()));
    PT_ASSIGN_OR_RETURN(const AttentionGraph graph, CausalAttentionBackwardGraph(shapes_));
    const int64_t gradient_bytes = FusedBackwardGradientBytes(shapes_);
    if (gradient_bytes > workspace_bytes) {
      return absl::UnimplementedError(
          absl::StrCat("the fused backward's bf16 key and value gradients need ", gradient_bytes,
                       " bytes, more than the attention workspace's ", workspace_bytes));
    }
    return CudnnAttention::Create(graph, workspace_bytes - gradient_bytes, stream_);
  }();
  // Any graph cuDNN does not build falls back (and is reported), so that a cuDNN version
  // that rejects a graph costs speed, not the probe; running out of memory is a measured
  // result.
  for (const Plan* plan : {&forward, &backward}) {
    if (absl::IsResourceExhausted(plan->status())) return plan->status();
  }
  fallback_reason_ = forward.ok() ? "" : std::string(forward.status().message());
  fused_forward_ = forward.ok() ? std::move(forward).value() : nullptr;
  backward_fallback_reason_ = backward.ok() ? "" : std::string(backward.status().message());
  fused_backward_ = backward.ok() ? std::move(backward).value() : nullptr;
  return absl::OkStatus();
}

template <typename Visit>
absl::Status Attention::ForEachChunk(Visit visit) const {
  // With context parallelism the rank's tokens are two position-contiguous halves.
  const int64_t n = dims_.tokens_per_sequence;
  const int64_t segment = shapes_.context_parallel > 1 ? n / 2 : n;
  for (int64_t sequence = 0; sequence < dims_.sequences; ++sequence) {
    for (int64_t start = 0; start < n; start += segment) {
      for (int64_t first = start; first < start + segment; first += query_chunk_) {
        const Chunk chunk{sequence, first, std::min(query_chunk_, start + segment - first)};
        PT_RETURN_IF_ERROR(visit(chunk));
      }
    }
  }
  return absl::OkStatus();
}

std::vector<Attention::KeyBlock> Attention::KeyBlocks(const Chunk& chunk) const {
  const int64_t c = shapes_.context_parallel;
  const int64_t n = dims_.tokens_per_sequence;
  const int64_t sequence_keys = chunk.sequence * dims_.kv_heads * n * dims_.head_dim;
  const int64_t keys = SoftmaxShape(chunk).keys;
  if (c == 1) return {{0, keys, sequence_keys}};
  // Position chunk j of length s/(2c) lies on rank j (first half of its tokens) for j < c,
  // on rank 2c - 1 - j (second half) otherwise.
  const int64_t length = shapes_.sequence / (2 * c);
  std::vector<KeyBlock> blocks;
  for (int64_t j = 0; j * length < keys; ++j) {
    const int64_t owner = j < c ? j : 2 * c - 1 - j;
    const int64_t half = j < c ? 0 : 1;
    blocks.push_back({j * length, std::min(length, keys - j * length),
                      owner * 2 * kv_block_ + sequence_keys + half * length * dims_.head_dim});
  }
  return blocks;
}

SoftmaxChunk Attention::SoftmaxShape(const Chunk& chunk) const {
  // PositionOf of attention_kernels.cu, host side: the chunk never crosses a half.
  const int64_t c = shapes_.context_parallel;
  const int64_t length = shapes_.sequence / (2 * c);
  const int64_t r = positions_.context_rank;
  const int64_t first_position = chunk.first_token < length
                                     ? r * length + chunk.first_token
                                     : (2 * c - 1 - r) * length + (chunk.first_token - length);
  SoftmaxChunk shape;
  shape.kv_heads = dims_.kv_heads;
  shape.heads_per_kv = dims_.heads_per_kv;
  shape.rows = chunk.tokens * dims_.heads_per_kv;
  shape.keys = first_position + chunk.tokens;
  shape.row_stride = (shape.keys + 7) / 8 * 8;
  shape.first_position = first_position;
  shape.lse_group_stride = dims_.tokens_per_sequence * dims_.heads_per_kv;
  return shape;
}

int64_t Attention::QueryOffset(const Chunk& chunk) const {
  return LseOffset(chunk) * dims_.head_dim;
}

int64_t Attention::LseOffset(const Chunk& chunk) const {
  return (chunk.sequence * dims_.kv_heads * dims_.tokens_per_sequence + chunk.first_token) *
         dims_.heads_per_kv;
}

// scores[:, block] = scale rows keys^T: rows [chunk rows, d] of the query layout (queries, or
// output gradients for dP), keys [block keys, d] (keys, or values for dP).
GemmArgs Attention::ScoresProduct(const __nv_bfloat16* rows, const __nv_bfloat16* keys,
                                  const Chunk& chunk, const KeyBlock& block, float* scores) const {
  const SoftmaxChunk shape = SoftmaxShape(chunk);
  GemmArgs g;
  g.transpose_b = true;
  g.m = shape.rows;
  g.n = block.keys;
  g.k = dims_.head_dim;
  g.a = rows + QueryOffset(chunk);
  g.lda = dims_.head_dim;
  g.b = keys + block.offset;
  g.ldb = dims_.head_dim;
  g.c = scores + block.first_key;
  g.ldc = shape.row_stride;
  g.c_type = GemmOutput::kFloat;
  g.batch = dims_.kv_heads;
  g.stride_a = dims_.tokens_per_sequence * dims_.heads_per_kv * dims_.head_dim;
  g.stride_b = dims_.tokens_per_sequence * dims_.head_dim;
  g.stride_c = shape.rows * shape.row_stride;
  return g;
}

// out [chunk rows, d] (+)= by_key[:, block] keys: by_key the probabilities (or score
// gradients), keys [block keys, d] the values (or keys, for dQ).
GemmArgs Attention::RowsByKeys(const __nv_bfloat16* by_key, const __nv_bfloat16* keys,
                               const Chunk& chunk, const KeyBlock& block, __nv_bfloat16* out,
                               bool accumulate) const {
  const SoftmaxChunk shape = SoftmaxShape(chunk);
  GemmArgs g;
  g.m = shape.rows;
  g.n = dims_.head_dim;
  g.k = block.keys;
  g.a = by_key + block.first_key;
  g.lda = shape.row_stride;
  g.b = keys + block.offset;
  g.ldb = dims_.head_dim;
  g.c = out + QueryOffset(chunk);
  g.ldc = dims_.head_dim;
  g.beta = accumulate ? 1 : 0;
  g.batch = dims_.kv_heads;
  g.stride_a = shape.rows * shape.row_stride;
  g.stride_b = dims_.tokens_per_sequence * dims_.head_dim;
  g.stride_c = dims_.tokens_per_sequence * dims_.heads_per_kv * dims_.head_dim;
  return g;
}

// out [block keys, d] += by_key[:, block]^T rows: the value gradients from probabilities and
// output gradients, or the key gradients from score gradients and queries; fp32.
GemmArgs Attention::KeysByRows(const __nv_bfloat16* by_key, const __nv_bfloat16* rows,
                               const Chunk& chunk, const KeyBlock& block, float* out) const {
  const SoftmaxChunk shape = SoftmaxShape(chunk);
  GemmArgs g;
  g.transpose_a = true;
  g.m = block.keys;
  g.n = dims_.head_dim;
  g.k = shape.rows;
  g.a = by_key + block.first_key;
  g.lda = shape.row_stride;
  g.b = rows + QueryOffset(chunk);
  g.ldb = dims_.head_dim;
  g.c = out + block.offset;
  g.ldc = dims_.head_dim;
  g.c_type = GemmOutput::kFloat;
  g.beta = 1;
  g.batch = dims_.kv_heads;
  g.stride_a = shape.rows * shape.row_stride;
  g.stride_b = dims_.tokens_per_sequence * dims_.heads_per_kv * dims_.head_dim;
  g.stride_c = dims_.tokens_per_sequence * dims_.head_dim;
  return g;
}

absl::StatusOr<const __nv_bfloat16*> Attention::AllKeyValues(const AttentionBuffers& buffers) {
  if (shapes_.context_parallel == 1) return buffers.key_value;
  PT_RETURN_IF_ERROR(timer_->Mark(ProbePhase::kCpCollectives));
  PT_RETURN_IF_ERROR(AllGather(context_, buffers.key_value, buffers.gathered_key_value,
                               2 * kv_block_, ncclBfloat16, stream_));
  PT_RETURN_IF_ERROR(timer_->Mark(ProbePhase::kAttention));
  return buffers.gathered_key_value;
}

absl::Status Attention::Forward(const __nv_bfloat16* qkv, __nv_bfloat16* out,
                                const AttentionBuffers& b) {
  PT_RETURN_IF_ERROR(timer_->Mark(ProbePhase::kAttention));
  PT_RETURN_IF_ERROR(
      CudaStatus(RopeSplit(qkv, b.query, b.key_value, dims_, positions_, stream_), "RopeSplit"));
  PT_ASSIGN_OR_RETURN(const __nv_bfloat16* keys, AllKeyValues(b));
  const __nv_bfloat16* values = keys + kv_block_;
  if (fused_forward_ != nullptr) {
    PT_RETURN_IF_ERROR(fused_forward_->Forward(b.query, keys, values, b.heads, b.lse, b.scores));
    return CudaStatus(HeadsToTokens(b.heads, out, dims_, stream_), "HeadsToTokens");
  }
  PT_RETURN_IF_ERROR(ForEachChunk([&](const Chunk& chunk) -> absl::Status {
    const std::vector<KeyBlock> blocks = KeyBlocks(chunk);
    for (const KeyBlock& block : blocks) {
      GemmArgs scores = ScoresProduct(b.query, keys, chunk, block, b.scores);
      scores.alpha = scale_;
      PT_RETURN_IF_ERROR(gemm_->Run(scores, stream_));
    }
    PT_RETURN_IF_ERROR(
        CudaStatus(CausalSoftmaxForward(b.scores, b.probabilities, b.lse + LseOffset(chunk),
                                        SoftmaxShape(chunk), stream_),
                   "CausalSoftmaxForward"));
    for (size_t i = 0; i < blocks.size(); ++i) {
      PT_RETURN_IF_ERROR(gemm_->Run(
          RowsByKeys(b.probabilities, values, chunk, blocks[i], b.heads, i > 0), stream_));
    }
    return absl::OkStatus();
  }));
  return CudaStatus(HeadsToTokens(b.heads, out, dims_, stream_), "HeadsToTokens");
}

absl::Status Attention::Backward(const __nv_bfloat16* d_out, const __nv_bfloat16* out,
                                 __nv_bfloat16* d_qkv, const AttentionBuffers& b) {
  PT_RETURN_IF_ERROR(timer_->Mark(ProbePhase::kAttention));
  PT_RETURN_IF_ERROR(fused_backward_ != nullptr ? FusedBackward(d_out, out, b)
                                                : ChunkedBackward(d_out, out, b));
  // Each rank's own keys and values' gradients: with context parallelism the chunked backward
  // has reduce-scattered them over the ranks that saw them.
  const float* own = b.key_value_gradients + positions_.context_rank * 2 * kv_block_;
  return CudaStatus(RopeSplitBackward(b.query_gradient, own, d_qkv, dims_, positions_, stream_),
                    "RopeSplitBackward");
}

absl::Status Attention::FusedBackward(const __nv_bfloat16* d_out, const __nv_bfloat16* out,
                                      const AttentionBuffers& b) {
  // cuDNN writes bf16 key and value gradients at the start of the workspace
  // (FusedBackwardGradientBytes); RopeSplitBackward takes them in fp32.
  __nv_bfloat16* d_keys = reinterpret_cast<__nv_bfloat16*>(b.scores);
  __nv_bfloat16* d_values = d_keys + kv_block_;
  char* workspace = reinterpret_cast<char*>(b.scores) + FusedBackwardGradientBytes(shapes_);
  PT_RETURN_IF_ERROR(fused_backward_->Backward(b.query, b.key_value, b.key_value + kv_block_, out,
                                               d_out, b.lse, b.query_gradient, d_keys, d_values,
                                               workspace));
  return CudaStatus(Bf16ToFloat(d_keys, b.key_value_gradients, 2 * kv_block_, stream_),
                    "Bf16ToFloat(key/value gradients)");
}

absl::Status Attention::ChunkedBackward(const __nv_bfloat16* d_out, const __nv_bfloat16* out,
                                        const AttentionBuffers& b) {
  PT_RETURN_IF_ERROR(CudaStatus(TokensToHeads(d_out, b.heads, dims_, stream_), "TokensToHeads"));
  PT_RETURN_IF_ERROR(
      CudaStatus(AttentionRowSums(d_out, out, b.row_sums, dims_, stream_), "AttentionRowSums"));
  const int64_t c = shapes_.context_parallel;
  PT_RETURN_IF_ERROR(CudaStatus(
      cudaMemsetAsync(b.key_value_gradients, 0, c * 2 * kv_block_ * sizeof(float), stream_),
      "cudaMemsetAsync(key/value gradients)"));
  PT_ASSIGN_OR_RETURN(const __nv_bfloat16* keys, AllKeyValues(b));
  const __nv_bfloat16* values = keys + kv_block_;
  float* key_gradients = b.key_value_gradients;
  float* value_gradients = b.key_value_gradients + kv_block_;
  PT_RETURN_IF_ERROR(ForEachChunk([&](const Chunk& chunk) -> absl::Status {
    const std::vector<KeyBlock> blocks = KeyBlocks(chunk);
    const SoftmaxChunk shape = SoftmaxShape(chunk);
    for (const KeyBlock& block : blocks) {
      GemmArgs scores = ScoresProduct(b.query, keys, chunk, block, b.scores);
      scores.alpha = scale_;
      PT_RETURN_IF_ERROR(gemm_->Run(scores, stream_));
    }
    PT_RETURN_IF_ERROR(CudaStatus(
        CausalSoftmaxRecompute(b.scores, b.lse + LseOffset(chunk), b.probabilities, shape, stream_),
        "CausalSoftmaxRecompute"));
    for (const KeyBlock& block : blocks) {
      // dV += P^T dO, then dP = dO V^T into the scores buffer.
      PT_RETURN_IF_ERROR(
          gemm_->Run(KeysByRows(b.probabilities, b.heads, chunk, block, value_gradients), stream_));
      PT_RETURN_IF_ERROR(
          gemm_->Run(ScoresProduct(b.heads, values, chunk, block, b.scores), stream_));
    }
    PT_RETURN_IF_ERROR(CudaStatus(CausalSoftmaxBackward(b.scores, b.row_sums + LseOffset(chunk),
                                                        b.probabilities, shape, stream_),
                                  "CausalSoftmaxBackward"));
    for (size_t i = 0; i < blocks.size(); ++i) {
      // dQ = scale dS K, dK += scale dS^T Q.
      GemmArgs d_query =
          RowsByKeys(b.probabilities, keys, chunk, blocks[i], b.query_gradient, i > 0);
      d_query.alpha = scale_;
      PT_RETURN_IF_ERROR(gemm_->Run(d_query, stream_));
      GemmArgs d_keys = KeysByRows(b.probabilities, b.query, chunk, blocks[i], key_gradients);
      d_keys.alpha = scale_;
      PT_RETURN_IF_ERROR(gemm_->Run(d_keys, stream_));
    }
    return absl::OkStatus();
  }));
  if (c == 1) return absl::OkStatus();
  float* own = b.key_value_gradients + positions_.context_rank * 2 * kv_block_;
  PT_RETURN_IF_ERROR(timer_->Mark(ProbePhase::kCpCollectives));
  PT_RETURN_IF_ERROR(
      ReduceScatter(context_, b.key_value_gradients, own, 2 * kv_block_, ncclFloat32, stream_));
  return timer_->Mark(ProbePhase::kAttention);
}

}  // namespace paratune
