// Sums and maxima across a thread block, for kernels that reduce a row per block. Device
// code: included by .cu files only.
#ifndef PARATUNE_WORKER_CUDA_BLOCK_REDUCE_CUH_
#define PARATUNE_WORKER_CUDA_BLOCK_REDUCE_CUH_

#include <cfloat>

namespace paratune {

inline __device__ float WarpSum(float value) {
  for (int offset = 16; offset > 0; offset /= 2) {
    value += __shfl_xor_sync(0xffffffffu, value, offset);
  }
  return value;
}

inline __device__ float WarpMax(float value) {
  for (int offset = 16; offset > 0; offset /= 2) {
    value = fmaxf(value, __shfl_xor_sync(0xffffffffu, value, offset));
  }
  return value;
}

// The sum of `value` over the block, returned to every thread. Every thread of the block
// must call it; blockDim.x must be a multiple of 32 and at most 1024. `scratch` holds 32
// floats of shared memory; the call ends with the block synchronized, so scratch can be
// reused by the next call.
inline __device__ float BlockSum(float value, float* scratch) {
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const int warps = blockDim.x / 32;
  value = WarpSum(value);
  if (lane == 0) scratch[warp] = value;
  __syncthreads();
  float total = lane < warps ? scratch[lane] : 0.0f;
  total = WarpSum(total);
  __syncthreads();
  return total;
}

// The maximum of `value` over the block; as BlockSum.
inline __device__ float BlockMax(float value, float* scratch) {
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const int warps = blockDim.x / 32;
  value = WarpMax(value);
  if (lane == 0) scratch[warp] = value;
  __syncthreads();
  float most = lane < warps ? scratch[lane] : -FLT_MAX;
  most = WarpMax(most);
  __syncthreads();
  return most;
}

// Elements handled by a grid-stride loop start at this index and advance by GridStride().
inline __device__ int64_t GridIndex() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
inline __device__ int64_t GridStride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

}  // namespace paratune

#endif  // PARATUNE_WORKER_CUDA_BLOCK_REDUCE_CUH_
