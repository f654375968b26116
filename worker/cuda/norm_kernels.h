// RMSNorm (Zhang & Sennrich 2019, as Llama uses it: y = x / rms(x) * weight) forward and
// backward, and the residual add, over rows of bf16 values.
#ifndef PARATUNE_WORKER_CUDA_NORM_KERNELS_H_
#define PARATUNE_WORKER_CUDA_NORM_KERNELS_H_

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

namespace paratune {

// Llama's epsilon.
inline constexpr float kRmsNormEpsilon = 1e-5f;

// y[r, :] = x[r, :] * rstd[r] * weight with rstd[r] = 1 / sqrt(mean(x[r, :]^2) + eps).
cudaError_t RmsNormForward(const __nv_bfloat16* x, const __nv_bfloat16* weight, __nv_bfloat16* y,
                           float* rstd, int64_t rows, int64_t hidden, cudaStream_t stream);

// The input gradient of RmsNormForward given dy, added to `residual` (the gradient that
// reaches x around the norm; nullptr for none): out = residual + dx with
// dx = rstd (w dy - xhat mean(w dy xhat)), xhat = x rstd. `out` may be `residual`.
cudaError_t RmsNormBackward(const __nv_bfloat16* x, const __nv_bfloat16* weight, const float* rstd,
                            const __nv_bfloat16* dy, const __nv_bfloat16* residual,
                            __nv_bfloat16* out, int64_t rows, int64_t hidden, cudaStream_t stream);

// weight_gradient[c] += sum over rows of dy[r, c] x[r, c] rstd[r]: fp32 gradients, or bf16
// when `fp32_gradient` is false.
cudaError_t RmsNormWeightGradient(const __nv_bfloat16* x, const float* rstd,
                                  const __nv_bfloat16* dy, void* weight_gradient,
                                  bool fp32_gradient, int64_t rows, int64_t hidden,
                                  cudaStream_t stream);

// out[i] = a[i] + b[i]; out may be a or b.
cudaError_t AddBf16(const __nv_bfloat16* a, const __nv_bfloat16* b, __nv_bfloat16* out,
                    int64_t count, cudaStream_t stream);

}  // namespace paratune

#endif  // PARATUNE_WORKER_CUDA_NORM_KERNELS_H_
