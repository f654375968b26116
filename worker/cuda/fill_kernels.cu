#include "worker/cuda/block_reduce.cuh"
#include "worker/cuda/fill_kernels.h"
#include "worker/cuda/fill_values.h"
#include "worker/cuda/launch.h"

namespace paratune {
namespace {

__global__ void FillUniformBf16Kernel(__nv_bfloat16* data, int64_t count, uint64_t seed,
                                      int64_t first, float scale) {
  for (int64_t i = GridIndex(); i < count; i += GridStride()) {
    data[i] = __float2bfloat16(FillUniformValue(seed, first + i, scale));
  }
}

__global__ void FillTokensKernel(int32_t* tokens, int64_t count, uint64_t seed, int32_t vocab) {
  for (int64_t i = GridIndex(); i < count; i += GridStride()) {
    tokens[i] = FillTokenValue(seed, i, vocab);
  }
}

__global__ void Bf16ToFloatKernel(const __nv_bfloat16* from, float* to, int64_t count) {
  for (int64_t i = GridIndex(); i < count; i += GridStride()) to[i] = __bfloat162float(from[i]);
}

}  // namespace

cudaError_t FillUniformBf16(__nv_bfloat16* data, int64_t count, uint64_t seed, float scale,
                            cudaStream_t stream) {
  return FillUniformBf16Slice(data, count, seed, 0, scale, stream);
}

cudaError_t FillUniformBf16Slice(__nv_bfloat16* data, int64_t count, uint64_t seed, int64_t first,
                                 float scale, cudaStream_t stream) {
  FillUniformBf16Kernel<<<GridBlocks(count), kThreadsPerBlock, 0, stream>>>(data, count, seed,
                                                                            first, scale);
  return cudaGetLastError();
}

cudaError_t FillTokens(int32_t* tokens, int64_t count, uint64_t seed, int32_t vocab,
                       cudaStream_t stream) {
  FillTokensKernel<<<GridBlocks(count), kThreadsPerBlock, 0, stream>>>(tokens, count, seed, vocab);
  return cudaGetLastError();
}

cudaError_t Bf16ToFloat(const __nv_bfloat16* from, float* to, int64_t count, cudaStream_t stream) {
  Bf16ToFloatKernel<<<GridBlocks(count), kThreadsPerBlock, 0, stream>>>(from, to, count);
  return cudaGetLastError();
}

}  // namespace paratune
