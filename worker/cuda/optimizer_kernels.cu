#include <cmath>

#include "worker/cuda/block_reduce.cuh"
#include "worker/cuda/launch.h"
#include "worker/cuda/optimizer_kernels.h"

namespace paratune {
namespace {

__global__ void AdamStepKernel(const void* gradient, bool fp32_gradient, float* master,
                               float* first_moment, float* second_moment, __nv_bfloat16* weights,
                               int64_t count, AdamParameters p, float first_correction,
                               float second_correction) {
  for (int64_t i = GridIndex(); i < count; i += GridStride()) {
    const float g = fp32_gradient
                        ? static_cast<const float*>(gradient)[i]
                        : __bfloat162float(static_cast<const __nv_bfloat16*>(gradient)[i]);
    const float m = p.beta1 * first_moment[i] + (1.0f - p.beta1) * g;
    const float v = p.beta2 * second_moment[i] + (1.0f - p.beta2) * g * g;
    first_moment[i] = m;
    second_moment[i] = v;
    const float update = (m / first_correction) / (sqrtf(v / second_correction) + p.epsilon) +
                         p.weight_decay * master[i];
    const float w = master[i] - p.learning_rate * update;
    master[i] = w;
    if (weights != nullptr) weights[i] = __float2bfloat16(w);
  }
}

__global__ void AddGradientsKernel(const void* addend, void* sum, bool fp32_gradient,
                                   int64_t count) {
  for (int64_t i = GridIndex(); i < count; i += GridStride()) {
    if (fp32_gradient) {
      static_cast<float*>(sum)[i] += static_cast<const float*>(addend)[i];
    } else {
      __nv_bfloat16* s = static_cast<__nv_bfloat16*>(sum);
      s[i] = __float2bfloat16(__bfloat162float(s[i]) +
                              __bfloat162float(static_cast<const __nv_bfloat16*>(addend)[i]));
    }
  }
}

}  // namespace

cudaError_t AddGradients(const void* addend, void* sum, bool fp32_gradient, int64_t count,
                         cudaStream_t stream) {
  AddGradientsKernel<<<GridBlocks(count), kThreadsPerBlock, 0, stream>>>(addend, sum, fp32_gradient,
                                                                         count);
  return cudaGetLastError();
}

cudaError_t AdamStep(const void* gradient, bool fp32_gradient, float* master, float* first_moment,
                     float* second_moment, __nv_bfloat16* weights, int64_t count,
                     const AdamParameters& parameters, cudaStream_t stream) {
  const float first_correction =
      1.0f - std::pow(parameters.beta1, static_cast<float>(parameters.step));
  const float second_correction =
      1.0f - std::pow(parameters.beta2, static_cast<float>(parameters.step));
  AdamStepKernel<<<GridBlocks(count), kThreadsPerBlock, 0, stream>>>(
      gradient, fp32_gradient, master, first_moment, second_moment, weights, count, parameters,
      first_correction, second_correction);
  return cudaGetLastError();
}

}  // namespace paratune
