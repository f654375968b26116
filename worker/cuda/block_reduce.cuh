// Sums and maxima across a thread block, for kernels that reduce a row per block. Device
// code: included by .cu files only.
#ifndef PARATUNE_WORKER_CUDA_BLOCK_REDUCE_CUH_
#define PARATUNE_WORKER_CUDA_BLOCK_REDUCE_CUH_

#include <cfloat>

namespace paratune {

struct SumOp {
  __device__ float operator()(float a, float b) const { return a + b; }
  static constexpr float kIdentity = 0.0f;
};
struct MaxOp {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
  static constexpr float kIdentity = -FLT_MAX;
};

template <typename Op>
inline __device__ float WarpReduce(float value, Op op) {
  for (int offset = 16; offset > 0; offset /= 2) {
    value = op(value, __shfl_xor_sync(0xffffffffu, value, offset));
  }
  return value;
}

// `value` reduced with `op` over the block, returned to every thread. Every thread of the
// block must call it; blockDim.x must be a multiple of 32 and at most 1024. `scratch` holds
// 32 floats of shared memory; the call ends with the block synchronized, so scratch can be
// reused by the next call.
template <typename Op>
inline __device__ float BlockReduce(float value, float* scratch, Op op) {
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const int warps = blockDim.x / 32;
  value = WarpReduce(value, op);
  if (lane == 0) scratch[warp] = value;
  __syncthreads();
  float total = lane < warps ? scratch[lane] : Op::kIdentity;
  total = WarpReduce(total, op);
  __syncthreads();
  return total;
}

inline __device__ float WarpSum(float value) { return WarpReduce(value, SumOp()); }
inline __device__ float BlockSum(float value, float* scratch) {
  return BlockReduce(value, scratch, SumOp());
}
inline __device__ float BlockMax(float value, float* scratch) {
  return BlockReduce(value, scratch, MaxOp());
}

// Elements handled by a grid-stride loop start at this index and advance by GridStride().
inline __device__ int64_t GridIndex() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
inline __device__ int64_t GridStride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

}  // namespace paratune

#endif  // PARATUNE_WORKER_CUDA_BLOCK_REDUCE_CUH_
