#include <cuda_fp8.h>

#include "worker/cuda/block_reduce.cuh"
#include "worker/cuda/fp8_kernels.h"
#include "worker/cuda/launch.h"

namespace paratune {
namespace {

// Tiles of kTile x kTile elements pass through shared memory so that both the fp8 copy and
// its transpose are written in coalesced rows.
constexpr int kTile = 32;
constexpr int kTileRowsPerPass = kThreadsPerBlock / kTile;

__nv_fp8_interpretation_t Interpretation(Fp8Format format) {
  return format == Fp8Format::kE4M3 ? __NV_E4M3 : __NV_E5M2;
}

// Non-negative floats order like their bit patterns, so an integer atomicMax is a float one.
__device__ void AtomicMaxNonNegative(float* address, float value) {
  atomicMax(reinterpret_cast<int*>(address), __float_as_int(value));
}

__global__ void CastToFp8Kernel(const __nv_bfloat16* in, int64_t rows, int64_t columns,
                                __nv_fp8_interpretation_t interpretation, const float* scale,
                                uint8_t* out, uint8_t* out_transposed, float* amax,
                                float* scale_inverse) {
  __shared__ uint8_t tile[kTile][kTile + 1];  // +1: no bank conflicts on the transposed read
  __shared__ float scratch[32];
  const float factor = *scale;
  if (scale_inverse != nullptr && blockIdx.x == 0 && threadIdx.x == 0) {
    *scale_inverse = 1.0f / factor;
  }
  const int x = threadIdx.x % kTile;
  const int y = threadIdx.x / kTile;
  const int64_t tile_columns = (columns + kTile - 1) / kTile;
  const int64_t tiles = ((rows + kTile - 1) / kTile) * tile_columns;
  float local_amax = 0.0f;
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const int64_t row0 = (t / tile_columns) * kTile;
    const int64_t column0 = (t % tile_columns) * kTile;
    for (int dy = y; dy < kTile; dy += kTileRowsPerPass) {
      const int64_t row = row0 + dy;
      const int64_t column = column0 + x;
      if (row < rows && column < columns) {
        const float value = __bfloat162float(in[row * columns + column]);
        local_amax = fmaxf(local_amax, fabsf(value));
        const uint8_t converted =
            __nv_cvt_float_to_fp8(value * factor, __NV_SATFINITE, interpretation);
        if (out != nullptr) out[row * columns + column] = converted;
        tile[dy][x] = converted;
      }
    }
    if (out_transposed == nullptr) continue;
    __syncthreads();
    for (int dy = y; dy < kTile; dy += kTileRowsPerPass) {
      const int64_t column = column0 + dy;
      const int64_t row = row0 + x;
      if (row < rows && column < columns) out_transposed[column * rows + row] = tile[x][dy];
    }
    __syncthreads();
  }
  const float block_amax = BlockMax(local_amax, scratch);
  if (threadIdx.x == 0) AtomicMaxNonNegative(amax, block_amax);
}

__global__ void CastMasterToFp8Kernel(const float* master, int64_t count,
                                      __nv_fp8_interpretation_t interpretation, const float* scale,
                                      uint8_t* out, float* amax) {
  __shared__ float scratch[32];
  const float factor = *scale;
  float local_amax = 0.0f;
  for (int64_t i = GridIndex(); i < count; i += GridStride()) {
    const float value = __bfloat162float(__float2bfloat16(master[i]));
    local_amax = fmaxf(local_amax, fabsf(value));
    out[i] = __nv_cvt_float_to_fp8(value * factor, __NV_SATFINITE, interpretation);
  }
  const float block_amax = BlockMax(local_amax, scratch);
  if (threadIdx.x == 0) AtomicMaxNonNegative(amax, block_amax);
}

__global__ void TransposeFp8Kernel(const uint8_t* in, int64_t rows, int64_t columns, uint8_t* out) {
  __shared__ uint8_t tile[kTile][kTile + 1];
  const int x = threadIdx.x % kTile;
  const int y = threadIdx.x / kTile;
  const int64_t tile_columns = (columns + kTile - 1) / kTile;
  const int64_t tiles = ((rows + kTile - 1) / kTile) * tile_columns;
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const int64_t row0 = (t / tile_columns) * kTile;
    const int64_t column0 = (t % tile_columns) * kTile;
    for (int dy = y; dy < kTile; dy += kTileRowsPerPass) {
      const int64_t row = row0 + dy;
      const int64_t column = column0 + x;
      if (row < rows && column < columns) tile[dy][x] = in[row * columns + column];
    }
    __syncthreads();
    for (int dy = y; dy < kTile; dy += kTileRowsPerPass) {
      const int64_t column = column0 + dy;
      const int64_t row = row0 + x;
      if (row < rows && column < columns) out[column * rows + row] = tile[x][dy];
    }
    __syncthreads();
  }
}

__global__ void UpdateFp8ScalesKernel(float* history, int64_t length, int64_t tensors,
                                      float scaled_max, float* scale, float* scale_inverse) {
  for (int64_t t = GridIndex(); t < tensors; t += GridStride()) {
    UpdateDelayedScaling(history + t, length, tensors, scaled_max, scale + t,
                         scale_inverse + t * kFp8ScaleInverseStride);
  }
}

}  // namespace

cudaError_t CastToFp8(const __nv_bfloat16* in, int64_t rows, int64_t columns, Fp8Format format,
                      const float* scale, void* out, void* out_transposed, float* amax,
                      float* scale_inverse, cudaStream_t stream) {
  const int64_t tiles = ((rows + kTile - 1) / kTile) * ((columns + kTile - 1) / kTile);
  const int blocks = GridBlocks(tiles * kThreadsPerBlock);
  CastToFp8Kernel<<<blocks, kThreadsPerBlock, 0, stream>>>(
      in, rows, columns, Interpretation(format), scale, static_cast<uint8_t*>(out),
      static_cast<uint8_t*>(out_transposed), amax, scale_inverse);
  return cudaGetLastError();
}

cudaError_t CastMasterToFp8(const float* master, int64_t count, Fp8Format format,
                            const float* scale, void* out, float* amax, cudaStream_t stream) {
  CastMasterToFp8Kernel<<<GridBlocks(count), kThreadsPerBlock, 0, stream>>>(
      master, count, Interpretation(format), scale, static_cast<uint8_t*>(out), amax);
  return cudaGetLastError();
}

cudaError_t TransposeFp8(const void* in, int64_t rows, int64_t columns, void* out,
                         cudaStream_t stream) {
  const int64_t tiles = ((rows + kTile - 1) / kTile) * ((columns + kTile - 1) / kTile);
  TransposeFp8Kernel<<<GridBlocks(tiles * kThreadsPerBlock), kThreadsPerBlock, 0, stream>>>(
      static_cast<const uint8_t*>(in), rows, columns, static_cast<uint8_t*>(out));
  return cudaGetLastError();
}

cudaError_t UpdateFp8Scales(float* history, int64_t length, int64_t tensors, float scaled_max,
                            float* scale, float* scale_inverse, cudaStream_t stream) {
  UpdateFp8ScalesKernel<<<GridBlocks(tensors), kThreadsPerBlock, 0, stream>>>(
      history, length, tensors, scaled_max, scale, scale_inverse);
  return cudaGetLastError();
}

}  // namespace paratune
