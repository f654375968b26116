// Adam with decoupled weight decay (Loshchilov & Hutter 2019), Megatron-LM's default
// optimizer, over a rank's shard: fp32 master weights and moments, bf16 weights out; and the
// accumulation of the gradient shard it reads.
#ifndef PARATUNE_WORKER_CUDA_OPTIMIZER_KERNELS_H_
#define PARATUNE_WORKER_CUDA_OPTIMIZER_KERNELS_H_

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

namespace paratune {

struct AdamParameters {
  float learning_rate = 1e-4f;
  float beta1 = 0.9f;
  float beta2 = 0.95f;  // Llama's
  float epsilon = 1e-8f;
  float weight_decay = 0.1f;
  int64_t step = 1;  // 1-based, for the bias corrections
};

// For i < count: reads gradient[i] (fp32, or bf16 when fp32_gradient is false), updates
// master[i], first_moment[i], second_moment[i] and writes weights[i] = bf16(master[i]), unless
// `weights` is null (fp8 weights, which Fp8Parameters casts from the master afterwards).
cudaError_t AdamStep(const void* gradient, bool fp32_gradient, float* master, float* first_moment,
                     float* second_moment, __nv_bfloat16* weights, int64_t count,
                     const AdamParameters& parameters, cudaStream_t stream);

// For i < count: sum[i] += addend[i], both fp32, or both bf16 when fp32_gradient is false (a
// micro-batch's reduced gradient shard added into the step's, under sharded gradients).
cudaError_t AddGradients(const void* addend, void* sum, bool fp32_gradient, int64_t count,
                         cudaStream_t stream);

}  // namespace paratune

#endif  // PARATUNE_WORKER_CUDA_OPTIMIZER_KERNELS_H_
