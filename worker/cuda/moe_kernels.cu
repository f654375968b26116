#include "worker/cuda/block_reduce.cuh"
#include "worker/cuda/launch.h"
#include "worker/cuda/moe_kernels.h"

namespace paratune {
namespace {

constexpr int kMaxTopK = 8;

__device__ float Sigmoid(float x) { return 1.0f / (1.0f + __expf(-x)); }

// The balanced position of copy c among the experts' `capacity` slots each, or -1 where its
// expert's capacity drops it (moe_kernels.h).
__device__ int64_t BalancedPosition(int64_t copy, int64_t experts, int64_t capacity) {
  const int64_t slot = copy / experts;
  return slot < capacity ? copy % experts * capacity + slot : -1;
}

// The top_k largest logits of `row` in descending order, ties to the lower index.
__device__ void TopKOfRow(const __nv_bfloat16* row, int64_t experts, int64_t top_k, float* values,
                          int32_t* indices) {
  for (int64_t j = 0; j < top_k; ++j) {
    float best = -INFINITY;
    int32_t best_index = -1;
    for (int64_t e = 0; e < experts; ++e) {
      bool taken = false;
      for (int64_t i = 0; i < j; ++i) taken = taken || indices[i] == e;
      const float value = __bfloat162float(row[e]);
      if (!taken && (best_index < 0 || value > best)) {
        best = value;
        best_index = static_cast<int32_t>(e);
      }
    }
    values[j] = best;
    indices[j] = best_index;
  }
}

// The probabilities of the top-k logits `values` (RouterScoreFunction).
__device__ void ScoreTopK(const float* values, int64_t top_k, RouterScoreFunction score,
                          float* probabilities) {
  float sum = 0;
  if (score == RouterScoreFunction::kSoftmax) {
    // values[0] is the largest.
    for (int64_t j = 0; j < top_k; ++j) {
      probabilities[j] = __expf(values[j] - values[0]);
      sum += probabilities[j];
    }
  } else {
    for (int64_t j = 0; j < top_k; ++j) {
      probabilities[j] = Sigmoid(values[j]);
      sum += probabilities[j];
    }
    if (top_k == 1) sum = 1;
  }
  for (int64_t j = 0; j < top_k; ++j) probabilities[j] /= sum;
}

__global__ void RouterTopKKernel(const __nv_bfloat16* logits, float* probabilities,
                                 int32_t* indices, int64_t rows, int64_t experts, int64_t top_k,
                                 RouterScoreFunction score) {
  for (int64_t row = GridIndex(); row < rows; row += GridStride()) {
    float values[kMaxTopK];
    int32_t chosen[kMaxTopK];
    float p[kMaxTopK];
    TopKOfRow(logits + row * experts, experts, top_k, values, chosen);
    ScoreTopK(values, top_k, score, p);
    for (int64_t j = 0; j < top_k; ++j) {
      probabilities[row * top_k + j] = p[j];
      indices[row * top_k + j] = chosen[j];
    }
  }
}

// Softmax over the top k: d l_j = p_j (d_j - sum_i p_i d_i). Sigmoid: p_j = s_j / sum s (s_j
// itself when k = 1), d s_j = (d_j - sum_i p_i d_i) / sum s, d l_j = d s_j s_j (1 - s_j).
__global__ void RouterTopKBackwardKernel(const __nv_bfloat16* logits, const float* probabilities,
                                         const int32_t* indices, const float* d_probabilities,
                                         __nv_bfloat16* d_logits, int64_t rows, int64_t experts,
                                         int64_t top_k, RouterScoreFunction score) {
  for (int64_t row = GridIndex(); row < rows; row += GridStride()) {
    for (int64_t e = 0; e < experts; ++e) d_logits[row * experts + e] = __float2bfloat16(0.0f);
    const float* p = probabilities + row * top_k;
    const float* d = d_probabilities + row * top_k;
    float dot = 0;
    for (int64_t j = 0; j < top_k; ++j) dot += p[j] * d[j];
    float sigmoid_sum = 0;
    if (score == RouterScoreFunction::kSigmoid) {
      for (int64_t j = 0; j < top_k; ++j) {
        sigmoid_sum += Sigmoid(__bfloat162float(logits[row * experts + indices[row * top_k + j]]));
      }
    }
    for (int64_t j = 0; j < top_k; ++j) {
      const int64_t e = indices[row * top_k + j];
      float gradient;
      if (score == RouterScoreFunction::kSoftmax) {
        gradient = p[j] * (d[j] - dot);
      } else {
        const float s = Sigmoid(__bfloat162float(logits[row * experts + e]));
        const float d_score = top_k == 1 ? d[j] : (d[j] - dot) / sigmoid_sum;
        gradient = d_score * s * (1.0f - s);
      }
      d_logits[row * experts + e] = __float2bfloat16(gradient);
    }
  }
}

// One thread per value of the permuted rows: each slot's copy, or zeros in a padding slot.
__global__ void PermuteBalancedKernel(const __nv_bfloat16* tokens, const float* probabilities,
                                      __nv_bfloat16* permuted, float* permuted_probabilities,
                                      int64_t rows, int64_t hidden, int64_t top_k, int64_t experts,
                                      int64_t capacity) {
  const int64_t copies = rows * top_k;
  for (int64_t i = GridIndex(); i < experts * capacity * hidden; i += GridStride()) {
    const int64_t position = i / hidden;
    const int64_t column = i % hidden;
    const int64_t copy = position / capacity + position % capacity * experts;
    const bool routed = copy < copies;
    permuted[i] = routed ? tokens[copy / top_k * hidden + column] : __float2bfloat16(0.0f);
    if (column == 0 && probabilities != nullptr) {
      permuted_probabilities[position] = routed ? probabilities[copy] : 0.0f;
    }
  }
}

__global__ void UnpermuteBalancedKernel(const __nv_bfloat16* permuted, __nv_bfloat16* out,
                                        int64_t rows, int64_t hidden, int64_t top_k,
                                        int64_t experts, int64_t capacity) {
  for (int64_t i = GridIndex(); i < rows * hidden; i += GridStride()) {
    const int64_t row = i / hidden;
    const int64_t column = i % hidden;
    float sum = 0;
    for (int64_t j = 0; j < top_k; ++j) {
      const int64_t position = BalancedPosition(row * top_k + j, experts, capacity);
      if (position >= 0) sum += __bfloat162float(permuted[position * hidden + column]);
    }
    out[i] = __float2bfloat16(sum);
  }
}

__global__ void UnpermuteProbabilitiesKernel(const float* d_permuted_probabilities,
                                             float* d_probabilities, int64_t copies,
                                             int64_t experts, int64_t capacity) {
  for (int64_t copy = GridIndex(); copy < copies; copy += GridStride()) {
    const int64_t position = BalancedPosition(copy, experts, capacity);
    d_probabilities[copy] = position >= 0 ? d_permuted_probabilities[position] : 0.0f;
  }
}

bool IsBalanced(int64_t rows, int64_t top_k, int64_t experts, int64_t capacity) {
  return rows * top_k % experts == 0 && capacity >= 1;
}

template <typename T>
__global__ void SortChunksKernel(const T* in, T* out, int64_t groups, int64_t local_experts,
                                 int64_t chunk_values) {
  const int64_t total = groups * local_experts * chunk_values;
  for (int64_t i = GridIndex(); i < total; i += GridStride()) {
    const int64_t chunk = i / chunk_values;
    const int64_t group = chunk / local_experts;
    const int64_t expert = chunk % local_experts;
    out[(expert * groups + group) * chunk_values + i % chunk_values] = in[i];
  }
}

__global__ void WeightedSwigluForwardKernel(const __nv_bfloat16* gate_up,
                                            const float* probabilities, __nv_bfloat16* out,
                                            int64_t rows, int64_t width) {
  for (int64_t i = GridIndex(); i < rows * width; i += GridStride()) {
    const int64_t row = i / width;
    const int64_t gate_index = row * 2 * width + i % width;
    const float gate = __bfloat162float(gate_up[gate_index]);
    const float up = __bfloat162float(gate_up[gate_index + width]);
    out[i] = __float2bfloat16(gate * Sigmoid(gate) * up * probabilities[row]);
  }
}

// d silu(g) / dg = sigmoid(g) (1 + g (1 - sigmoid(g))), as mlp_kernels.cu's SwiGLU.
__global__ void WeightedSwigluBackwardKernel(const __nv_bfloat16* gate_up,
                                             const float* probabilities, const __nv_bfloat16* d_out,
                                             __nv_bfloat16* d_gate_up, float* d_probabilities,
                                             int64_t width) {
  __shared__ float scratch[32];
  const int64_t row = blockIdx.x;
  const float p = probabilities[row];
  float d_p = 0;
  for (int64_t column = threadIdx.x; column < width; column += blockDim.x) {
    const int64_t gate_index = row * 2 * width + column;
    const float gate = __bfloat162float(gate_up[gate_index]);
    const float up = __bfloat162float(gate_up[gate_index + width]);
    const float grad = __bfloat162float(d_out[row * width + column]);
    const float sigmoid = Sigmoid(gate);
    const float silu = gate * sigmoid;
    d_gate_up[gate_index] =
        __float2bfloat16(grad * p * up * sigmoid * (1.0f + gate * (1.0f - sigmoid)));
    d_gate_up[gate_index + width] = __float2bfloat16(grad * p * silu);
    d_p += grad * silu * up;
  }
  d_p = BlockSum(d_p, scratch);
  if (threadIdx.x == 0) d_probabilities[row] = d_p;
}

}  // namespace

cudaError_t RouterTopK(const __nv_bfloat16* logits, float* probabilities, int32_t* indices,
                       int64_t rows, int64_t experts, int64_t top_k, RouterScoreFunction score,
                       cudaStream_t stream) {
  if (top_k < 1 || top_k > kMaxTopK || top_k > experts) return cudaErrorInvalidValue;
  RouterTopKKernel<<<GridBlocks(rows), kThreadsPerBlock, 0, stream>>>(
      logits, probabilities, indices, rows, experts, top_k, score);
  return cudaGetLastError();
}

cudaError_t RouterTopKBackward(const __nv_bfloat16* logits, const float* probabilities,
                               const int32_t* indices, const float* d_probabilities,
                               __nv_bfloat16* d_logits, int64_t rows, int64_t experts,
                               int64_t top_k, RouterScoreFunction score, cudaStream_t stream) {
  if (top_k < 1 || top_k > kMaxTopK || top_k > experts) return cudaErrorInvalidValue;
  RouterTopKBackwardKernel<<<GridBlocks(rows), kThreadsPerBlock, 0, stream>>>(
      logits, probabilities, indices, d_probabilities, d_logits, rows, experts, top_k, score);
  return cudaGetLastError();
}

cudaError_t PermuteBalanced(const __nv_bfloat16* tokens, const float* probabilities,
                            __nv_bfloat16* permuted, float* permuted_probabilities, int64_t rows,
                            int64_t hidden, int64_t top_k, int64_t experts, int64_t capacity,
                            cudaStream_t stream) {
  if (!IsBalanced(rows, top_k, experts, capacity)) return cudaErrorInvalidValue;
  PermuteBalancedKernel<<<GridBlocks(experts * capacity * hidden), kThreadsPerBlock, 0, stream>>>(
      tokens, probabilities, permuted, permuted_probabilities, rows, hidden, top_k, experts,
      capacity);
  return cudaGetLastError();
}

cudaError_t UnpermuteBalanced(const __nv_bfloat16* permuted, __nv_bfloat16* out, int64_t rows,
                              int64_t hidden, int64_t top_k, int64_t experts, int64_t capacity,
                              cudaStream_t stream) {
  if (!IsBalanced(rows, top_k, experts, capacity)) return cudaErrorInvalidValue;
  UnpermuteBalancedKernel<<<GridBlocks(rows * hidden), kThreadsPerBlock, 0, stream>>>(
      permuted, out, rows, hidden, top_k, experts, capacity);
  return cudaGetLastError();
}

cudaError_t UnpermuteProbabilities(const float* d_permuted_probabilities, float* d_probabilities,
                                   int64_t rows, int64_t top_k, int64_t experts, int64_t capacity,
                                   cudaStream_t stream) {
  if (!IsBalanced(rows, top_k, experts, capacity)) return cudaErrorInvalidValue;
  UnpermuteProbabilitiesKernel<<<GridBlocks(rows * top_k), kThreadsPerBlock, 0, stream>>>(
      d_permuted_probabilities, d_probabilities, rows * top_k, experts, capacity);
  return cudaGetLastError();
}

cudaError_t SortChunksBf16(const __nv_bfloat16* in, __nv_bfloat16* out, int64_t groups,
                           int64_t local_experts, int64_t chunk_rows, int64_t width,
                           cudaStream_t stream) {
  const int64_t chunk_values = chunk_rows * width;
  SortChunksKernel<<<GridBlocks(groups * local_experts * chunk_values), kThreadsPerBlock, 0,
                     stream>>>(in, out, groups, local_experts, chunk_values);
  return cudaGetLastError();
}

cudaError_t SortChunksFloat(const float* in, float* out, int64_t groups, int64_t local_experts,
                            int64_t chunk_rows, int64_t width, cudaStream_t stream) {
  const int64_t chunk_values = chunk_rows * width;
  SortChunksKernel<<<GridBlocks(groups * local_experts * chunk_values), kThreadsPerBlock, 0,
                     stream>>>(in, out, groups, local_experts, chunk_values);
  return cudaGetLastError();
}

cudaError_t WeightedSwigluForward(const __nv_bfloat16* gate_up, const float* probabilities,
                                  __nv_bfloat16* out, int64_t rows, int64_t width,
                                  cudaStream_t stream) {
  WeightedSwigluForwardKernel<<<GridBlocks(rows * width), kThreadsPerBlock, 0, stream>>>(
      gate_up, probabilities, out, rows, width);
  return cudaGetLastError();
}

cudaError_t WeightedSwigluBackward(const __nv_bfloat16* gate_up, const float* probabilities,
                                   const __nv_bfloat16* d_out, __nv_bfloat16* d_gate_up,
                                   float* d_probabilities, int64_t rows, int64_t width,
                                   cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  WeightedSwigluBackwardKernel<<<static_cast<unsigned>(rows), kThreadsPerBlock, 0, stream>>>(
      gate_up, probabilities, d_out, d_gate_up, d_probabilities, width);
  return cudaGetLastError();
}

}  // namespace paratune
