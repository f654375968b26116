// The values the fill kernels write, as functions of (seed, index): the kernels compute them on
// the GPU and the GPU tests' references on the CPU, so that a test's expected contents never
// come from the GPU path it checks.
#ifndef PARATUNE_WORKER_CUDA_FILL_VALUES_H_
#define PARATUNE_WORKER_CUDA_FILL_VALUES_H_

#include <cuda_runtime_api.h>  // __host__ __device__ for the host compiler

#include <cstdint>

namespace paratune {

// SplitMix64's finalizer (Steele, Lea, Flood 2014): a well-mixed 64-bit value per index.
__host__ __device__ inline uint64_t FillMix(uint64_t seed, uint64_t index) {
  uint64_t z = seed + (index + 1) * 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Element `index` of FillUniformBf16(seed, scale) before its rounding to bf16: the top 24 bits
// of the mix as a fraction u in [0, 1), mapped to (2u - 1) x scale.
__host__ __device__ inline float FillUniformValue(uint64_t seed, uint64_t index, float scale) {
  const float unit = static_cast<float>(FillMix(seed, index) >> 40) * (1.0f / 16777216.0f);
  return (2.0f * unit - 1.0f) * scale;
}

// Element `index` of FillTokens(seed, vocab).
__host__ __device__ inline int32_t FillTokenValue(uint64_t seed, uint64_t index, int32_t vocab) {
  return static_cast<int32_t>(FillMix(seed, index) % static_cast<uint64_t>(vocab));
}

}  // namespace paratune

#endif  // PARATUNE_WORKER_CUDA_FILL_VALUES_H_
