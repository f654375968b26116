// The fp8 side of Transformer Engine's Linear on the GPU: casts of bf16 tensors to fp8 with
// a per-tensor scale, recording the tensor's amax, and the end-of-iteration update of every
// tensor's amax window and scale (worker/probe/fp8_scaling.h holds the recipe).
#ifndef PARATUNE_WORKER_CUDA_FP8_KERNELS_H_
#define PARATUNE_WORKER_CUDA_FP8_KERNELS_H_

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "worker/probe/fp8_scaling.h"

namespace paratune {

// out[r, c] = fp8(in[r, c] x *scale), saturated to the format's largest value as Transformer
// Engine's casts are; out_transposed[c, r] the same values transposed (cuBLASLt's fp8 GEMMs
// take only k-contiguous operands, so the backward pass needs the transposes). Either output
// may be null, not both. *amax becomes the larger of itself and max |in| (unscaled), which is
// how a cast records the tensor's amax in its window's current slot. Unless null,
// *scale_inverse becomes 1 / *scale, the factor that undoes this cast, kept with the fp8 data
// as Transformer Engine's Float8Tensor keeps its scale_inv (the tensor's scale may move on
// before the data is read). in: [rows, columns] bf16; out and out_transposed: rows x columns
// bytes of `format`.
cudaError_t CastToFp8(const __nv_bfloat16* in, int64_t rows, int64_t columns, Fp8Format format,
                      const float* scale, void* out, void* out_transposed, float* amax,
                      float* scale_inverse, cudaStream_t stream);

// out[i] = fp8(bf16(master[i]) x *scale), saturated, for i < count: the optimizer's cast of
// fp32 master weights into fp8 weights, through the model's dtype first as Transformer
// Engine's cast_master_weights_to_fp8 casts them. *amax becomes the larger of itself and
// max |bf16(master[i])|. out: count bytes of `format`.
cudaError_t CastMasterToFp8(const float* master, int64_t count, Fp8Format format,
                            const float* scale, void* out, float* amax, cudaStream_t stream);

// out[c, r] = in[r, c] for fp8 bytes of any format: the transpose of an fp8 tensor that
// arrived as such (a sequence-parallel all-gather of fp8 rows, as Transformer Engine gathers
// a LayerNormLinear's fp8 input again for the weight gradient). in: [rows, columns], out:
// [columns, rows].
cudaError_t TransposeFp8(const void* in, int64_t rows, int64_t columns, void* out,
                         cudaStream_t stream);

// For each of `tensors` tensors t: UpdateDelayedScaling of the window history[t],
// history[tensors + t], ... (length entries, Transformer Engine's [length, tensors] layout),
// scale[t] and scale_inverse[t * kFp8ScaleInverseStride] (each inverse in a slot a GEMM can
// read), toward scaled_max (ScaledFp8Max of the tensors' format).
cudaError_t UpdateFp8Scales(float* history, int64_t length, int64_t tensors, float scaled_max,
                            float* scale, float* scale_inverse, cudaStream_t stream);

}  // namespace paratune

#endif  // PARATUNE_WORKER_CUDA_FP8_KERNELS_H_
