#include "worker/cuda/block_reduce.cuh"
#include "worker/cuda/launch.h"
#include "worker/cuda/loss_kernels.h"

namespace paratune {
namespace {

__global__ void EmbeddingForwardKernel(const int32_t* tokens, const __nv_bfloat16* table,
                                       __nv_bfloat16* out, int64_t count, int64_t hidden,
                                       VocabularyShard shard) {
  for (int64_t index = GridIndex(); index < count * hidden; index += GridStride()) {
    const int64_t row = tokens[index / hidden] - shard.start;
    const bool mine = row >= 0 && row < shard.size;
    out[index] = mine ? table[row * hidden + index % hidden] : __float2bfloat16(0.0f);
  }
}

__global__ void EmbeddingBackwardKernel(const int32_t* tokens, const __nv_bfloat16* d_out,
                                        void* table_gradient, bool fp32_gradient, int64_t count,
                                        int64_t hidden, VocabularyShard shard) {
  for (int64_t index = GridIndex(); index < count * hidden; index += GridStride()) {
    const int64_t row = tokens[index / hidden] - shard.start;
    if (row < 0 || row >= shard.size) continue;
    const int64_t target = row * hidden + index % hidden;
    if (fp32_gradient) {
      atomicAdd(static_cast<float*>(table_gradient) + target, __bfloat162float(d_out[index]));
    } else {
      atomicAdd(static_cast<__nv_bfloat16*>(table_gradient) + target, d_out[index]);
    }
  }
}

// One block per row.
__global__ void LogitsRowMaxKernel(const float* logits, float* row_max, int64_t vocab) {
  __shared__ float scratch[32];
  const float* row = logits + blockIdx.x * vocab;
  float most = -FLT_MAX;
  for (int64_t v = threadIdx.x; v < vocab; v += blockDim.x) most = fmaxf(most, row[v]);
  most = BlockMax(most, scratch);
  if (threadIdx.x == 0) row_max[blockIdx.x] = most;
}

__global__ void LogitsRowSumExpKernel(const float* logits, const float* row_max, float* row_sum,
                                      int64_t vocab) {
  __shared__ float scratch[32];
  const float* row = logits + blockIdx.x * vocab;
  const float most = row_max[blockIdx.x];
  float sum = 0;
  for (int64_t v = threadIdx.x; v < vocab; v += blockDim.x) sum += __expf(row[v] - most);
  sum = BlockSum(sum, scratch);
  if (threadIdx.x == 0) row_sum[blockIdx.x] = sum;
}

__global__ void CrossEntropyBackwardKernel(const float* logits, const float* row_max,
                                           const float* row_sum, const int32_t* labels,
                                           __nv_bfloat16* d_logits, float* loss, float scale,
                                           VocabularyShard shard) {
  const int64_t t = blockIdx.x;
  const float* row = logits + t * shard.size;
  const float most = row_max[t];
  const float inverse_sum = 1.0f / row_sum[t];
  const int64_t label = labels[t] - shard.start;
  for (int64_t v = threadIdx.x; v < shard.size; v += blockDim.x) {
    const float softmax = __expf(row[v] - most) * inverse_sum;
    d_logits[t * shard.size + v] = __float2bfloat16((softmax - (v == label ? 1.0f : 0.0f)) * scale);
  }
  if (threadIdx.x == 0) {
    const bool mine = label >= 0 && label < shard.size;
    loss[t] = mine ? logf(row_sum[t]) + most - row[label] : 0.0f;
  }
}

}  // namespace

cudaError_t EmbeddingForward(const int32_t* tokens, const __nv_bfloat16* table, __nv_bfloat16* out,
                             int64_t count, int64_t hidden, const VocabularyShard& shard,
                             cudaStream_t stream) {
  EmbeddingForwardKernel<<<GridBlocks(count * hidden), kThreadsPerBlock, 0, stream>>>(
      tokens, table, out, count, hidden, shard);
  return cudaGetLastError();
}

cudaError_t EmbeddingBackward(const int32_t* tokens, const __nv_bfloat16* d_out,
                              void* table_gradient, bool fp32_gradient, int64_t count,
                              int64_t hidden, const VocabularyShard& shard, cudaStream_t stream) {
  EmbeddingBackwardKernel<<<GridBlocks(count * hidden), kThreadsPerBlock, 0, stream>>>(
      tokens, d_out, table_gradient, fp32_gradient, count, hidden, shard);
  return cudaGetLastError();
}

cudaError_t LogitsRowMax(const float* logits, float* row_max, int64_t count,
                         const VocabularyShard& shard, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  LogitsRowMaxKernel<<<static_cast<unsigned>(count), kThreadsPerBlock, 0, stream>>>(logits, row_max,
                                                                                    shard.size);
  return cudaGetLastError();
}

cudaError_t LogitsRowSumExp(const float* logits, const float* row_max, float* row_sum,
                            int64_t count, const VocabularyShard& shard, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  LogitsRowSumExpKernel<<<static_cast<unsigned>(count), kThreadsPerBlock, 0, stream>>>(
      logits, row_max, row_sum, shard.size);
  return cudaGetLastError();
}

cudaError_t CrossEntropyBackward(const float* logits, const float* row_max, const float* row_sum,
                                 const int32_t* labels, __nv_bfloat16* d_logits, float* loss,
                                 float scale, int64_t count, const VocabularyShard& shard,
                                 cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  CrossEntropyBackwardKernel<<<static_cast<unsigned>(count), kThreadsPerBlock, 0, stream>>>(
      logits, row_max, row_sum, labels, d_logits, loss, scale, shard);
  return cudaGetLastError();
}

}  // namespace paratune
