#include "worker/cuda/block_reduce.cuh"
#include "worker/cuda/launch.h"
#include "worker/cuda/norm_kernels.h"

namespace paratune {
namespace {

// Rows per block of the weight-gradient kernel: each block adds its partial column sums once.
constexpr int64_t kRowsPerWeightGradientBlock = 128;

// One block per row.
__global__ void RmsNormForwardKernel(const __nv_bfloat16* x, const __nv_bfloat16* weight,
                                     __nv_bfloat16* y, float* rstd, int64_t hidden) {
  __shared__ float scratch[32];
  const int64_t row = blockIdx.x;
  const __nv_bfloat16* in = x + row * hidden;
  float squares = 0;
  for (int64_t c = threadIdx.x; c < hidden; c += blockDim.x) {
    const float v = __bfloat162float(in[c]);
    squares += v * v;
  }
  const float inverse_rms =
      rsqrtf(BlockSum(squares, scratch) / static_cast<float>(hidden) + kRmsNormEpsilon);
  __nv_bfloat16* out = y + row * hidden;
  for (int64_t c = threadIdx.x; c < hidden; c += blockDim.x) {
    out[c] = __float2bfloat16(__bfloat162float(in[c]) * inverse_rms * __bfloat162float(weight[c]));
  }
  if (threadIdx.x == 0) rstd[row] = inverse_rms;
}

__global__ void RmsNormBackwardKernel(const __nv_bfloat16* x, const __nv_bfloat16* weight,
                                      const float* rstd, const __nv_bfloat16* dy,
                                      const __nv_bfloat16* residual, __nv_bfloat16* out,
                                      int64_t hidden) {
  __shared__ float scratch[32];
  const int64_t row = blockIdx.x;
  const int64_t base = row * hidden;
  const float r = rstd[row];
  float dot = 0;
  for (int64_t c = threadIdx.x; c < hidden; c += blockDim.x) {
    const float xhat = __bfloat162float(x[base + c]) * r;
    dot += __bfloat162float(weight[c]) * __bfloat162float(dy[base + c]) * xhat;
  }
  const float mean = BlockSum(dot, scratch) / static_cast<float>(hidden);
  for (int64_t c = threadIdx.x; c < hidden; c += blockDim.x) {
    const float xhat = __bfloat162float(x[base + c]) * r;
    const float wdy = __bfloat162float(weight[c]) * __bfloat162float(dy[base + c]);
    const float dx = r * (wdy - xhat * mean);
    const float around = residual != nullptr ? __bfloat162float(residual[base + c]) : 0.0f;
    out[base + c] = __float2bfloat16(around + dx);
  }
}

// Block (column tile, row tile): each thread sums one column over the block's rows, then
// adds the sum to the gradient once.
__global__ void RmsNormWeightGradientKernel(const __nv_bfloat16* x, const float* rstd,
                                            const __nv_bfloat16* dy, void* weight_gradient,
                                            bool fp32_gradient, int64_t rows, int64_t hidden) {
  const int64_t column = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (column >= hidden) return;
  const int64_t first = static_cast<int64_t>(blockIdx.y) * kRowsPerWeightGradientBlock;
  const int64_t last = min(rows, first + kRowsPerWeightGradientBlock);
  float sum = 0;
  for (int64_t row = first; row < last; ++row) {
    const int64_t i = row * hidden + column;
    sum += __bfloat162float(dy[i]) * __bfloat162float(x[i]) * rstd[row];
  }
  if (fp32_gradient) {
    atomicAdd(static_cast<float*>(weight_gradient) + column, sum);
  } else {
    atomicAdd(static_cast<__nv_bfloat16*>(weight_gradient) + column, __float2bfloat16(sum));
  }
}

__global__ void AddBf16Kernel(const __nv_bfloat16* a, const __nv_bfloat16* b, __nv_bfloat16* out,
                              int64_t count) {
  for (int64_t i = GridIndex(); i < count; i += GridStride()) {
    out[i] = __float2bfloat16(__bfloat162float(a[i]) + __bfloat162float(b[i]));
  }
}

}  // namespace

cudaError_t RmsNormForward(const __nv_bfloat16* x, const __nv_bfloat16* weight, __nv_bfloat16* y,
                           float* rstd, int64_t rows, int64_t hidden, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  RmsNormForwardKernel<<<static_cast<unsigned>(rows), kThreadsPerBlock, 0, stream>>>(x, weight, y,
                                                                                     rstd, hidden);
  return cudaGetLastError();
}

cudaError_t RmsNormBackward(const __nv_bfloat16* x, const __nv_bfloat16* weight, const float* rstd,
                            const __nv_bfloat16* dy, const __nv_bfloat16* residual,
                            __nv_bfloat16* out, int64_t rows, int64_t hidden, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  RmsNormBackwardKernel<<<static_cast<unsigned>(rows), kThreadsPerBlock, 0, stream>>>(
      x, weight, rstd, dy, residual, out, hidden);
  return cudaGetLastError();
}

cudaError_t RmsNormWeightGradient(const __nv_bfloat16* x, const float* rstd,
                                  const __nv_bfloat16* dy, void* weight_gradient,
                                  bool fp32_gradient, int64_t rows, int64_t hidden,
                                  cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  const dim3 blocks(static_cast<unsigned>((hidden + kThreadsPerBlock - 1) / kThreadsPerBlock),
                    static_cast<unsigned>((rows + kRowsPerWeightGradientBlock - 1) /
                                          kRowsPerWeightGradientBlock));
  RmsNormWeightGradientKernel<<<blocks, kThreadsPerBlock, 0, stream>>>(x, rstd, dy, weight_gradient,
                                                                       fp32_gradient, rows, hidden);
  return cudaGetLastError();
}

cudaError_t AddBf16(const __nv_bfloat16* a, const __nv_bfloat16* b, __nv_bfloat16* out,
                    int64_t count, cudaStream_t stream) {
  AddBf16Kernel<<<GridBlocks(count), kThreadsPerBlock, 0, stream>>>(a, b, out, count);
  return cudaGetLastError();
}

}  // namespace paratune
