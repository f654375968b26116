#include <cmath>
#include <type_traits>

#include "worker/cuda/attention_kernels.h"
#include "worker/cuda/block_reduce.cuh"
#include "worker/cuda/launch.h"

namespace paratune {
namespace {

// Position in the whole sequence of local token i (TokenPositions).
__device__ int64_t PositionOf(int64_t i, const TokenPositions& p) {
  const int64_t chunk = p.sequence / (2 * p.context_parallel);
  if (i < chunk) return p.context_rank * chunk + i;
  return (2 * p.context_parallel - 1 - p.context_rank) * chunk + (i - chunk);
}

// cos and sin of position x inverse frequency j of a head of dimension d: theta_j =
// base^(-2j/d). Accurate sincosf: the angles reach 10^5 radians for long sequences.
__device__ void RopeAngle(int64_t position, int64_t j, int64_t d, float* cosine, float* sine) {
  const float inverse_frequency =
      expf(-(2.0f * static_cast<float>(j) / static_cast<float>(d)) * logf(kRopeBase));
  sincosf(static_cast<float>(position) * inverse_frequency, sine, cosine);
}

// Index helpers for the layouts of attention_kernels.h.
struct Layout {
  AttentionDims d;
  __device__ int64_t Slots() const { return d.heads_per_kv + 2; }
  __device__ int64_t QkvWidth() const { return d.kv_heads * Slots() * d.head_dim; }
  // Element 0 of query head h of group g of token (seq, i), in the query layout.
  __device__ int64_t Query(int64_t seq, int64_t g, int64_t i, int64_t h) const {
    return (((seq * d.kv_heads + g) * d.tokens_per_sequence + i) * d.heads_per_kv + h) * d.head_dim;
  }
  // Element 0 of key (which 0) or value (which 1) of group g, token (seq, i), kv layout.
  __device__ int64_t KeyValue(int64_t which, int64_t seq, int64_t g, int64_t i) const {
    return (((which * d.sequences + seq) * d.kv_heads + g) * d.tokens_per_sequence + i) *
           d.head_dim;
  }
};

// One element pair (j, j + d/2) of head slot `slot` (queries 0 .. H - 1, then the key and
// the value) of kv group g of token `token` = (seq, i): what one thread of the rotary
// kernels handles.
struct QkvPair {
  int64_t j, slot, g, token, seq, i;
};

__device__ QkvPair PairOf(int64_t index, const Layout& layout) {
  const int64_t half = layout.d.head_dim / 2;
  QkvPair p;
  p.j = index % half;
  int64_t rest = index / half;
  p.slot = rest % layout.Slots();
  rest /= layout.Slots();
  p.g = rest % layout.d.kv_heads;
  p.token = rest / layout.d.kv_heads;
  p.seq = p.token / layout.d.tokens_per_sequence;
  p.i = p.token % layout.d.tokens_per_sequence;
  return p;
}

// One thread per QkvPair.
__global__ void RopeSplitKernel(const __nv_bfloat16* qkv, __nv_bfloat16* query, __nv_bfloat16* kv,
                                Layout layout, TokenPositions positions, int64_t count) {
  const int64_t half = layout.d.head_dim / 2;
  for (int64_t index = GridIndex(); index < count; index += GridStride()) {
    const auto [j, slot, g, token, seq, i] = PairOf(index, layout);
    const __nv_bfloat16* in =
        qkv + token * layout.QkvWidth() + (g * layout.Slots() + slot) * layout.d.head_dim;
    const float x0 = __bfloat162float(in[j]);
    const float x1 = __bfloat162float(in[j + half]);
    __nv_bfloat16* out;
    float y0 = x0, y1 = x1;
    if (slot < layout.d.heads_per_kv) {
      out = query + layout.Query(seq, g, i, slot);
    } else {
      out = kv + layout.KeyValue(slot - layout.d.heads_per_kv, seq, g, i);
    }
    if (slot <= layout.d.heads_per_kv) {  // queries and the key rotate; the value does not
      float cosine, sine;
      RopeAngle(PositionOf(i, positions), j, layout.d.head_dim, &cosine, &sine);
      y0 = x0 * cosine - x1 * sine;
      y1 = x1 * cosine + x0 * sine;
    }
    out[j] = __float2bfloat16(y0);
    out[j + half] = __float2bfloat16(y1);
  }
}

__global__ void RopeSplitBackwardKernel(const __nv_bfloat16* d_query, const float* d_kv,
                                        __nv_bfloat16* d_qkv, Layout layout,
                                        TokenPositions positions, int64_t count) {
  const int64_t half = layout.d.head_dim / 2;
  for (int64_t index = GridIndex(); index < count; index += GridStride()) {
    const auto [j, slot, g, token, seq, i] = PairOf(index, layout);
    float g0, g1;
    if (slot < layout.d.heads_per_kv) {
      const __nv_bfloat16* in = d_query + layout.Query(seq, g, i, slot);
      g0 = __bfloat162float(in[j]);
      g1 = __bfloat162float(in[j + half]);
    } else {
      const float* in = d_kv + layout.KeyValue(slot - layout.d.heads_per_kv, seq, g, i);
      g0 = in[j];
      g1 = in[j + half];
    }
    float x0 = g0, x1 = g1;
    if (slot <= layout.d.heads_per_kv) {
      float cosine, sine;
      RopeAngle(PositionOf(i, positions), j, layout.d.head_dim, &cosine, &sine);
      x0 = g0 * cosine + g1 * sine;
      x1 = g1 * cosine - g0 * sine;
    }
    __nv_bfloat16* out =
        d_qkv + token * layout.QkvWidth() + (g * layout.Slots() + slot) * layout.d.head_dim;
    out[j] = __float2bfloat16(x0);
    out[j + half] = __float2bfloat16(x1);
  }
}

// One thread per element of the tokens layout [b, n, G, H, d].
__global__ void PermuteHeadsKernel(const __nv_bfloat16* from, __nv_bfloat16* to, Layout layout,
                                   bool to_tokens, int64_t count) {
  const int64_t row = layout.d.heads_per_kv * layout.d.head_dim;  // contiguous in both
  for (int64_t index = GridIndex(); index < count; index += GridStride()) {
    const int64_t within = index % row;
    int64_t rest = index / row;
    const int64_t g = rest % layout.d.kv_heads;
    rest /= layout.d.kv_heads;
    const int64_t i = rest % layout.d.tokens_per_sequence;
    const int64_t seq = rest / layout.d.tokens_per_sequence;
    const int64_t heads = layout.Query(seq, g, i, 0) + within;
    if (to_tokens) {
      to[index] = from[heads];
    } else {
      to[heads] = from[index];
    }
  }
}

// One block per (kv head g, row r).
__global__ void CausalSoftmaxForwardKernel(const float* scores, __nv_bfloat16* probabilities,
                                           float* lse, SoftmaxChunk chunk) {
  __shared__ float scratch[32];
  const int64_t g = blockIdx.x / chunk.rows;
  const int64_t r = blockIdx.x % chunk.rows;
  const int64_t visible = min(chunk.keys, chunk.diagonal + r / chunk.heads_per_kv + 1);
  const float* in = scores + blockIdx.x * chunk.row_stride;
  __nv_bfloat16* out = probabilities + blockIdx.x * chunk.row_stride;
  float most = -FLT_MAX;
  for (int64_t k = threadIdx.x; k < visible; k += blockDim.x) most = fmaxf(most, in[k]);
  most = BlockMax(most, scratch);
  float sum = 0;
  for (int64_t k = threadIdx.x; k < visible; k += blockDim.x) sum += __expf(in[k] - most);
  const float log_sum = most + logf(BlockSum(sum, scratch));
  for (int64_t k = threadIdx.x; k < chunk.keys; k += blockDim.x) {
    out[k] = __float2bfloat16(k < visible ? __expf(in[k] - log_sum) : 0.0f);
  }
  if (threadIdx.x == 0) lse[g * chunk.lse_group_stride + r] = log_sum;
}

__global__ void CausalSoftmaxRecomputeKernel(const float* scores, const float* lse,
                                             __nv_bfloat16* probabilities, SoftmaxChunk chunk,
                                             int64_t count) {
  for (int64_t index = GridIndex(); index < count; index += GridStride()) {
    const int64_t k = index % chunk.keys;
    const int64_t row = index / chunk.keys;  // g * rows + r
    const int64_t g = row / chunk.rows;
    const int64_t r = row % chunk.rows;
    const int64_t cell = row * chunk.row_stride + k;
    const bool visible = k <= chunk.diagonal + r / chunk.heads_per_kv;
    probabilities[cell] = __float2bfloat16(
        visible ? __expf(scores[cell] - lse[g * chunk.lse_group_stride + r]) : 0.0f);
  }
}

// One warp per (token, kv head, head) row of d elements.
__global__ void AttentionRowSumsKernel(const __nv_bfloat16* d_out, const __nv_bfloat16* out,
                                       float* row_sums, Layout layout, int64_t rows) {
  const int64_t warp = GridIndex() / 32;
  const int lane = threadIdx.x % 32;
  if (warp >= rows) return;
  const int64_t h = warp % layout.d.heads_per_kv;
  int64_t rest = warp / layout.d.heads_per_kv;
  const int64_t g = rest % layout.d.kv_heads;
  const int64_t token = rest / layout.d.kv_heads;
  const int64_t seq = token / layout.d.tokens_per_sequence;
  const int64_t i = token % layout.d.tokens_per_sequence;
  const int64_t base = warp * layout.d.head_dim;
  float sum = 0;
  for (int64_t e = lane; e < layout.d.head_dim; e += 32) {
    sum += __bfloat162float(d_out[base + e]) * __bfloat162float(out[base + e]);
  }
  sum = WarpSum(sum);
  if (lane == 0) row_sums[layout.Query(seq, g, i, h) / layout.d.head_dim] = sum;
}

__global__ void CausalSoftmaxBackwardKernel(const float* d_probabilities, const float* row_sums,
                                            __nv_bfloat16* probabilities, SoftmaxChunk chunk,
                                            int64_t count) {
  for (int64_t index = GridIndex(); index < count; index += GridStride()) {
    const int64_t row = index / chunk.keys;
    const int64_t g = row / chunk.rows;
    const int64_t r = row % chunk.rows;
    const int64_t cell = row * chunk.row_stride + index % chunk.keys;
    const float p = __bfloat162float(probabilities[cell]);
    const float d = row_sums[g * chunk.lse_group_stride + r];
    probabilities[cell] = __float2bfloat16(p * (d_probabilities[cell] - d));
  }
}

// One warp per (sequence, kv head, token in the range, head) row of d elements.
__global__ void MergeAttentionPartialKernel(const __nv_bfloat16* partial, const float* partial_lse,
                                            __nv_bfloat16* out, float* lse, Layout layout,
                                            int64_t first_token, int64_t tokens, int64_t rows) {
  const int64_t warp = GridIndex() / 32;
  const int lane = threadIdx.x % 32;
  if (warp >= rows) return;
  const int64_t h = warp % layout.d.heads_per_kv;
  int64_t rest = warp / layout.d.heads_per_kv;
  const int64_t i = first_token + rest % tokens;
  rest /= tokens;
  const int64_t g = rest % layout.d.kv_heads;
  const int64_t seq = rest / layout.d.kv_heads;
  const int64_t base = layout.Query(seq, g, i, h);
  const int64_t row = base / layout.d.head_dim;
  const float kept = lse[row];
  const float added = partial_lse[row];
  const float most = fmaxf(kept, added);
  const float merged = most + log1pf(__expf(fminf(kept, added) - most));
  const float kept_weight = __expf(kept - merged);
  const float added_weight = __expf(added - merged);
  for (int64_t e = lane; e < layout.d.head_dim; e += 32) {
    out[base + e] = __float2bfloat16(kept_weight * __bfloat162float(out[base + e]) +
                                     added_weight * __bfloat162float(partial[base + e]));
  }
  __syncwarp();  // every lane has read lse[row]
  if (lane == 0) lse[row] = merged;
}

__global__ void AccumulateFloatsKernel(const float* part, float* sum, int64_t count) {
  for (int64_t index = GridIndex(); index < count; index += GridStride()) sum[index] += part[index];
}

// sum += part over tokens [first_token, first_token + tokens) of `groups` blocks of
// `tokens_per_group` tokens of `width` elements: count = groups x tokens x width.
template <typename Sum>
__global__ void AccumulateTokensKernel(const __nv_bfloat16* part, Sum* sum, int64_t groups,
                                       int64_t tokens_per_group, int64_t width, int64_t first_token,
                                       int64_t tokens) {
  const int64_t count = groups * tokens * width;
  for (int64_t index = GridIndex(); index < count; index += GridStride()) {
    const int64_t e = index % width;
    const int64_t rest = index / width;
    const int64_t at =
        ((rest / tokens) * tokens_per_group + first_token + rest % tokens) * width + e;
    if constexpr (std::is_same_v<Sum, float>) {
      sum[at] += __bfloat162float(part[at]);
    } else {
      sum[at] = __float2bfloat16(__bfloat162float(sum[at]) + __bfloat162float(part[at]));
    }
  }
}

// Element e of position p of kv group `group` ((which * b + seq) * G + g) in position order
// [2, b, G, s, d], and the same element in the rank-ordered [c, kv layout].
struct GatheredPositions {
  AttentionDims d;
  int64_t context_parallel;
  __device__ int64_t Ordered(int64_t group, int64_t p, int64_t e) const {
    return (group * d.tokens_per_sequence * context_parallel + p) * d.head_dim + e;
  }
  __device__ int64_t Gathered(int64_t group, int64_t p, int64_t e) const {
    const int64_t length = d.tokens_per_sequence / 2;  // s/(2c)
    const int64_t chunk = p / length;
    const bool first_half = chunk < context_parallel;
    const int64_t owner = first_half ? chunk : 2 * context_parallel - 1 - chunk;
    const int64_t local = (first_half ? 0 : length) + p % length;
    const int64_t block = 2 * d.sequences * d.kv_heads * d.tokens_per_sequence * d.head_dim;
    return owner * block + (group * d.tokens_per_sequence + local) * d.head_dim + e;
  }
};

// One thread per element of positions [0, keys) of the 2 b G kv groups: count = 2 b G keys d.
__global__ void GatheredToPositionsKernel(const __nv_bfloat16* gathered, __nv_bfloat16* ordered,
                                          GatheredPositions layout, int64_t keys, int64_t count) {
  for (int64_t index = GridIndex(); index < count; index += GridStride()) {
    const int64_t e = index % layout.d.head_dim;
    const int64_t rest = index / layout.d.head_dim;
    const int64_t p = rest % keys, group = rest / keys;
    ordered[layout.Ordered(group, p, e)] = gathered[layout.Gathered(group, p, e)];
  }
}

__global__ void AccumulatePositionsKernel(const __nv_bfloat16* part, float* sum,
                                          GatheredPositions layout, int64_t keys, int64_t count) {
  for (int64_t index = GridIndex(); index < count; index += GridStride()) {
    const int64_t e = index % layout.d.head_dim;
    const int64_t rest = index / layout.d.head_dim;
    const int64_t p = rest % keys, group = rest / keys;
    sum[layout.Gathered(group, p, e)] += __bfloat162float(part[layout.Ordered(group, p, e)]);
  }
}

int64_t QkvPairs(const AttentionDims& d) {
  return d.sequences * d.tokens_per_sequence * d.kv_heads * (d.heads_per_kv + 2) * (d.head_dim / 2);
}

int64_t QueryElements(const AttentionDims& d) {
  return d.sequences * d.tokens_per_sequence * d.kv_heads * d.heads_per_kv * d.head_dim;
}

}  // namespace

cudaError_t RopeSplit(const __nv_bfloat16* qkv, __nv_bfloat16* query, __nv_bfloat16* kv,
                      const AttentionDims& dims, const TokenPositions& positions,
                      cudaStream_t stream) {
  const int64_t count = QkvPairs(dims);
  RopeSplitKernel<<<GridBlocks(count), kThreadsPerBlock, 0, stream>>>(qkv, query, kv, Layout{dims},
                                                                      positions, count);
  return cudaGetLastError();
}

cudaError_t RopeSplitBackward(const __nv_bfloat16* d_query, const float* d_kv, __nv_bfloat16* d_qkv,
                              const AttentionDims& dims, const TokenPositions& positions,
                              cudaStream_t stream) {
  const int64_t count = QkvPairs(dims);
  RopeSplitBackwardKernel<<<GridBlocks(count), kThreadsPerBlock, 0, stream>>>(
      d_query, d_kv, d_qkv, Layout{dims}, positions, count);
  return cudaGetLastError();
}

cudaError_t HeadsToTokens(const __nv_bfloat16* heads, __nv_bfloat16* tokens,
                          const AttentionDims& dims, cudaStream_t stream) {
  const int64_t count = QueryElements(dims);
  PermuteHeadsKernel<<<GridBlocks(count), kThreadsPerBlock, 0, stream>>>(heads, tokens,
                                                                         Layout{dims}, true, count);
  return cudaGetLastError();
}

cudaError_t TokensToHeads(const __nv_bfloat16* tokens, __nv_bfloat16* heads,
                          const AttentionDims& dims, cudaStream_t stream) {
  const int64_t count = QueryElements(dims);
  PermuteHeadsKernel<<<GridBlocks(count), kThreadsPerBlock, 0, stream>>>(
      tokens, heads, Layout{dims}, false, count);
  return cudaGetLastError();
}

cudaError_t CausalSoftmaxForward(const float* scores, __nv_bfloat16* probabilities, float* lse,
                                 const SoftmaxChunk& chunk, cudaStream_t stream) {
  const int64_t rows = chunk.kv_heads * chunk.rows;
  if (rows == 0) return cudaSuccess;
  CausalSoftmaxForwardKernel<<<static_cast<unsigned>(rows), kThreadsPerBlock, 0, stream>>>(
      scores, probabilities, lse, chunk);
  return cudaGetLastError();
}

cudaError_t CausalSoftmaxRecompute(const float* scores, const float* lse,
                                   __nv_bfloat16* probabilities, const SoftmaxChunk& chunk,
                                   cudaStream_t stream) {
  const int64_t count = chunk.kv_heads * chunk.rows * chunk.keys;
  CausalSoftmaxRecomputeKernel<<<GridBlocks(count), kThreadsPerBlock, 0, stream>>>(
      scores, lse, probabilities, chunk, count);
  return cudaGetLastError();
}

cudaError_t AttentionRowSums(const __nv_bfloat16* d_out, const __nv_bfloat16* out, float* row_sums,
                             const AttentionDims& dims, cudaStream_t stream) {
  const int64_t rows = QueryElements(dims) / dims.head_dim;
  const int64_t blocks = (rows * 32 + kThreadsPerBlock - 1) / kThreadsPerBlock;
  AttentionRowSumsKernel<<<static_cast<unsigned>(blocks), kThreadsPerBlock, 0, stream>>>(
      d_out, out, row_sums, Layout{dims}, rows);
  return cudaGetLastError();
}

cudaError_t CausalSoftmaxBackward(const float* d_probabilities, const float* row_sums,
                                  __nv_bfloat16* probabilities, const SoftmaxChunk& chunk,
                                  cudaStream_t stream) {
  const int64_t count = chunk.kv_heads * chunk.rows * chunk.keys;
  CausalSoftmaxBackwardKernel<<<GridBlocks(count), kThreadsPerBlock, 0, stream>>>(
      d_probabilities, row_sums, probabilities, chunk, count);
  return cudaGetLastError();
}

cudaError_t MergeAttentionPartial(const __nv_bfloat16* partial, const float* partial_lse,
                                  __nv_bfloat16* out, float* lse, const AttentionDims& dims,
                                  int64_t first_token, int64_t tokens, cudaStream_t stream) {
  const int64_t rows = dims.sequences * dims.kv_heads * tokens * dims.heads_per_kv;
  if (rows == 0) return cudaSuccess;
  const int64_t blocks = (rows * 32 + kThreadsPerBlock - 1) / kThreadsPerBlock;
  MergeAttentionPartialKernel<<<static_cast<unsigned>(blocks), kThreadsPerBlock, 0, stream>>>(
      partial, partial_lse, out, lse, Layout{dims}, first_token, tokens, rows);
  return cudaGetLastError();
}

cudaError_t AccumulateFloats(const float* part, float* sum, int64_t count, cudaStream_t stream) {
  AccumulateFloatsKernel<<<GridBlocks(count), kThreadsPerBlock, 0, stream>>>(part, sum, count);
  return cudaGetLastError();
}

cudaError_t AccumulateQueryTokens(const __nv_bfloat16* part, __nv_bfloat16* sum,
                                  const AttentionDims& dims, int64_t first_token, int64_t tokens,
                                  cudaStream_t stream) {
  const int64_t groups = dims.sequences * dims.kv_heads;
  const int64_t width = dims.heads_per_kv * dims.head_dim;
  AccumulateTokensKernel<<<GridBlocks(groups * tokens * width), kThreadsPerBlock, 0, stream>>>(
      part, sum, groups, dims.tokens_per_sequence, width, first_token, tokens);
  return cudaGetLastError();
}

cudaError_t AccumulateKeyValueTokens(const __nv_bfloat16* part, float* sum,
                                     const AttentionDims& dims, int64_t first_token, int64_t tokens,
                                     cudaStream_t stream) {
  const int64_t groups = 2 * dims.sequences * dims.kv_heads;  // keys, then values
  AccumulateTokensKernel<<<GridBlocks(groups * tokens * dims.head_dim), kThreadsPerBlock, 0,
                           stream>>>(part, sum, groups, dims.tokens_per_sequence, dims.head_dim,
                                     first_token, tokens);
  return cudaGetLastError();
}

cudaError_t GatheredKeyValuesToPositions(const __nv_bfloat16* gathered, __nv_bfloat16* ordered,
                                         const AttentionDims& dims, int64_t context_parallel,
                                         cudaStream_t stream) {
  const int64_t keys = dims.tokens_per_sequence * context_parallel;  // s
  const int64_t count = 2 * dims.sequences * dims.kv_heads * keys * dims.head_dim;
  GatheredToPositionsKernel<<<GridBlocks(count), kThreadsPerBlock, 0, stream>>>(
      gathered, ordered, GatheredPositions{dims, context_parallel}, keys, count);
  return cudaGetLastError();
}

cudaError_t AccumulatePositionsToGathered(const __nv_bfloat16* part, float* sum,
                                          const AttentionDims& dims, int64_t context_parallel,
                                          int64_t keys, cudaStream_t stream) {
  const int64_t count = 2 * dims.sequences * dims.kv_heads * keys * dims.head_dim;
  AccumulatePositionsKernel<<<GridBlocks(count), kThreadsPerBlock, 0, stream>>>(
      part, sum, GatheredPositions{dims, context_parallel}, keys, count);
  return cudaGetLastError();
}

}  // namespace paratune
