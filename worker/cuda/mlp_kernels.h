// SwiGLU (Shazeer 2020, Llama's MLP activation): out = silu(gate) * up over rows whose
// first half is the gate projection and second half the up projection (Megatron-LM's fused
// fc1 output, split with torch.chunk).
#ifndef PARATUNE_WORKER_CUDA_MLP_KERNELS_H_
#define PARATUNE_WORKER_CUDA_MLP_KERNELS_H_

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

namespace paratune {

// gate_up: [rows, 2 width]; out: [rows, width].
cudaError_t SwigluForward(const __nv_bfloat16* gate_up, __nv_bfloat16* out, int64_t rows,
                          int64_t width, cudaStream_t stream);

// d_gate_up: [rows, 2 width], the gradient of SwigluForward's input given d_out.
cudaError_t SwigluBackward(const __nv_bfloat16* gate_up, const __nv_bfloat16* d_out,
                           __nv_bfloat16* d_gate_up, int64_t rows, int64_t width,
                           cudaStream_t stream);

}  // namespace paratune

#endif  // PARATUNE_WORKER_CUDA_MLP_KERNELS_H_
