#include "worker/cuda/block_reduce.cuh"
#include "worker/cuda/fill_kernels.h"
#include "worker/cuda/launch.h"

namespace paratune {
namespace {

// SplitMix64's finalizer (Steele, Lea, Flood 2014): a well-mixed 64-bit value per index.
__device__ uint64_t Mix(uint64_t seed, uint64_t index) {
  uint64_t z = seed + (index + 1) * 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

__global__ void FillUniformBf16Kernel(__nv_bfloat16* data, int64_t count, uint64_t seed,
                                      float scale) {
  for (int64_t i = GridIndex(); i < count; i += GridStride()) {
    // The top 24 bits as a fraction in [0, 1).
    const float unit = static_cast<float>(Mix(seed, i) >> 40) * (1.0f / 16777216.0f);
    data[i] = __float2bfloat16((2.0f * unit - 1.0f) * scale);
  }
}

__global__ void FillTokensKernel(int32_t* tokens, int64_t count, uint64_t seed, int32_t vocab) {
  for (int64_t i = GridIndex(); i < count; i += GridStride()) {
    tokens[i] = static_cast<int32_t>(Mix(seed, i) % static_cast<uint64_t>(vocab));
  }
}

__global__ void Bf16ToFloatKernel(const __nv_bfloat16* from, float* to, int64_t count) {
  for (int64_t i = GridIndex(); i < count; i += GridStride()) to[i] = __bfloat162float(from[i]);
}

}  // namespace

cudaError_t FillUniformBf16(__nv_bfloat16* data, int64_t count, uint64_t seed, float scale,
                            cudaStream_t stream) {
  FillUniformBf16Kernel<<<GridBlocks(count), kThreadsPerBlock, 0, stream>>>(data, count, seed,
                                                                            scale);
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
