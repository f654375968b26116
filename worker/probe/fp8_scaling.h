// Per-tensor delayed scaling of fp8 tensors, as Transformer Engine's default recipe does it
// (transformer_engine.common.recipe.DelayedScaling: margin 0, fp8_format HYBRID,
// amax_history_len 1024, amax_compute_algo "max"). Each fp8 tensor keeps a window of the
// absolute maxima (amax) its casts saw; a cast multiplies by `scale`, chosen from the window's
// largest amax of previous iterations so that it lands on the format's largest value, and the
// GEMM multiplies by 1 / scale to undo it.
//
// Plain C++ that nvcc compiles too: the probe's update kernel (worker/cuda/fp8_kernels.cu)
// runs these functions on the GPU, and fp8_scaling_test.cc checks them on the CPU.
#ifndef PARATUNE_WORKER_PROBE_FP8_SCALING_H_
#define PARATUNE_WORKER_PROBE_FP8_SCALING_H_

#include <cfloat>
#include <cmath>
#include <cstdint>

#ifdef __CUDACC__
#define PT_HOST_DEVICE __host__ __device__
#else
#define PT_HOST_DEVICE
#endif

namespace paratune {

enum class Fp8Format { kE4M3, kE5M2 };

// The largest finite values: E4M3 has no infinities and one NaN pattern, so 1.75 x 2^8; E5M2
// is IEEE-like, 1.75 x 2^15 (Micikevicius et al. 2022, "FP8 Formats for Deep Learning",
// table 1).
inline constexpr float kFp8E4M3Max = 448.0f;
inline constexpr float kFp8E5M2Max = 57344.0f;

// Transformer Engine's DelayedScaling defaults (its API reference, recipe.DelayedScaling).
// Megatron-LM's --fp8-format=hybrid, which the export writes, keeps its own defaults instead
// (--fp8-amax-history-len 1, "most_recent", which for one entry is "max"; docs/backends.md):
// {1, 0} here.
struct DelayedScalingRecipe {
  // Iterations of amax kept per tensor.
  int64_t amax_history_length = 1024;
  // The scaled amax lands 2^margin below the format's largest value.
  int margin = 0;
};

// What the probe runs: the recipe of Megatron-LM's --fp8-format=hybrid with its own defaults
// (--fp8-margin 0, --fp8-amax-history-len 1, --fp8-amax-compute-algo most_recent), which the
// exports write (deploy/templates/megatron_llama.textproto; NeMo's trainer.plugins.fp8=hybrid
// keeps the same defaults, docs/backends.md), so that what is probed is what is exported.
inline constexpr DelayedScalingRecipe kExportedFp8Recipe{1, 0};

// cuBLASLt's fp8 GEMMs take an operand's scale inverse (CUBLASLT_MATMUL_DESC_A_SCALE_POINTER,
// B_SCALE_POINTER) only from a 16-byte aligned address: on an H200 with the cuBLAS 13 of
// PyTorch's nvidia-cublas wheel, cublasLtMatmul answered CUBLAS_STATUS_NOT_SUPPORTED for fp8
// products whose scale inverse lay 4 or 12 bytes past a 16-byte boundary in an array of floats,
// and ran the same products with aligned ones (docs/probe.md, "First run"). So every scale
// inverse a GEMM may read has a slot of its own: arrays of them hold one float per
// kFp8ScaleInverseStride.
inline constexpr int64_t kFp8ScaleInverseAlignment = 16;
inline constexpr int64_t kFp8ScaleInverseStride = kFp8ScaleInverseAlignment / sizeof(float);

// Format HYBRID: E4M3 (more precision) for the forward pass's activations and weights, E5M2
// (more range) for the backward pass's gradients.
inline constexpr Fp8Format HybridFormat(bool gradient) {
  return gradient ? Fp8Format::kE5M2 : Fp8Format::kE4M3;
}

inline constexpr float Fp8Max(Fp8Format format) {
  return format == Fp8Format::kE4M3 ? kFp8E4M3Max : kFp8E5M2Max;
}

// The value a tensor's amax is scaled to: Fp8Max / 2^margin.
inline float ScaledFp8Max(Fp8Format format, int margin) {
  return std::ldexp(Fp8Max(format), -margin);
}

// The scale for a window whose largest amax is `amax`: scaled_max / amax. As Transformer
// Engine's update kernel (transformer_engine/common/recipe/delayed_scaling.cu) does, a zero,
// infinite or NaN amax keeps `previous_scale` (nothing was measured, or it overflowed), and a
// quotient beyond fp32 becomes FLT_MAX.
PT_HOST_DEVICE inline float DelayedScale(float amax, float previous_scale, float scaled_max) {
  // False for NaN, as every comparison with it is.
  const bool measured = amax > 0.0f && amax <= FLT_MAX;
  if (!measured) return previous_scale;
  const float scale = scaled_max / amax;
  return scale <= FLT_MAX ? scale : FLT_MAX;
}

// Ends an iteration for one tensor whose amax window is history[0], history[stride], ...,
// history[(length - 1) stride], history[0] being the slot the iteration's casts wrote: returns
// the window's largest amax (amax_compute_algo "max"), and rolls the window as Transformer
// Engine's nvte_delayed_scaling_recipe_amax_and_scale_update documents: rotated by -1 (the
// first entry moves to the last, each other one place forward), then the first entry zeroed
// for the next iteration's casts.
PT_HOST_DEVICE inline float RollAmaxHistory(float* history, int64_t length, int64_t stride) {
  const float newest = history[0];
  float amax = newest;
  for (int64_t i = 1; i < length; ++i) {
    const float value = history[i * stride];
    amax = value > amax ? value : amax;
    history[(i - 1) * stride] = value;
  }
  history[(length - 1) * stride] = newest;
  history[0] = 0.0f;
  return amax;
}

// RollAmaxHistory, then the tensor's next scale and its inverse (the GEMM's dequantization
// factor) from the window's amax.
PT_HOST_DEVICE inline void UpdateDelayedScaling(float* history, int64_t length, int64_t stride,
                                                float scaled_max, float* scale,
                                                float* scale_inverse) {
  const float amax = RollAmaxHistory(history, length, stride);
  *scale = DelayedScale(amax, *scale, scaled_max);
  *scale_inverse = 1.0f / *scale;
}

}  // namespace paratune

#undef PT_HOST_DEVICE

#endif  // PARATUNE_WORKER_PROBE_FP8_SCALING_H_
