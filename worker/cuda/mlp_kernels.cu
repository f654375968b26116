#include "worker/cuda/block_reduce.cuh"
#include "worker/cuda/launch.h"
#include "worker/cuda/mlp_kernels.h"

namespace paratune {
namespace {

__device__ float Sigmoid(float x) { return 1.0f / (1.0f + __expf(-x)); }

__global__ void SwigluForwardKernel(const __nv_bfloat16* gate_up, __nv_bfloat16* out, int64_t rows,
                                    int64_t width) {
  for (int64_t i = GridIndex(); i < rows * width; i += GridStride()) {
    const int64_t row = i / width;
    const int64_t column = i % width;
    const float gate = __bfloat162float(gate_up[row * 2 * width + column]);
    const float up = __bfloat162float(gate_up[row * 2 * width + width + column]);
    out[i] = __float2bfloat16(gate * Sigmoid(gate) * up);
  }
}

// d silu(g) / dg = sigmoid(g) (1 + g (1 - sigmoid(g))).
__global__ void SwigluBackwardKernel(const __nv_bfloat16* gate_up, const __nv_bfloat16* d_out,
                                     __nv_bfloat16* d_gate_up, int64_t rows, int64_t width) {
  for (int64_t i = GridIndex(); i < rows * width; i += GridStride()) {
    const int64_t row = i / width;
    const int64_t column = i % width;
    const int64_t gate_index = row * 2 * width + column;
    const float gate = __bfloat162float(gate_up[gate_index]);
    const float up = __bfloat162float(gate_up[gate_index + width]);
    const float grad = __bfloat162float(d_out[i]);
    const float sigmoid = Sigmoid(gate);
    const float silu = gate * sigmoid;
    d_gate_up[gate_index] =
        __float2bfloat16(grad * up * sigmoid * (1.0f + gate * (1.0f - sigmoid)));
    d_gate_up[gate_index + width] = __float2bfloat16(grad * silu);
  }
}

}  // namespace

cudaError_t SwigluForward(const __nv_bfloat16* gate_up, __nv_bfloat16* out, int64_t rows,
                          int64_t width, cudaStream_t stream) {
  SwigluForwardKernel<<<GridBlocks(rows * width), kThreadsPerBlock, 0, stream>>>(gate_up, out, rows,
                                                                                 width);
  return cudaGetLastError();
}

cudaError_t SwigluBackward(const __nv_bfloat16* gate_up, const __nv_bfloat16* d_out,
                           __nv_bfloat16* d_gate_up, int64_t rows, int64_t width,
                           cudaStream_t stream) {
  SwigluBackwardKernel<<<GridBlocks(rows * width), kThreadsPerBlock, 0, stream>>>(
      gate_up, d_out, d_gate_up, rows, width);
  return cudaGetLastError();
}

}  // namespace paratune
