// Helpers for the probe's fp8 GPU tests: fp8 bytes encoded and decoded on the CPU (cuda_fp8.h's
// host conversions, the tests' independent reference), seeded random fp8 data, the amax a cast
// records, a small layer's shapes, and the device's compute capability.
#ifndef PARATUNE_WORKER_CUDA_FP8_TEST_UTIL_H_
#define PARATUNE_WORKER_CUDA_FP8_TEST_UTIL_H_

#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "worker/probe/fp8_scaling.h"
#include "worker/probe/shard_shapes.h"

namespace paratune {

// The current device's compute capability as major x 10 + minor (90 on an H100); -1 when
// CUDA cannot tell.
inline int ComputeCapability() {
  int device = 0, major = 0, minor = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess) {
    return -1;
  }
  return major * 10 + minor;
}

// The value of one fp8 byte of `format`.
inline double Fp8ToDouble(uint8_t bits, Fp8Format format) {
  if (format == Fp8Format::kE4M3) {
    __nv_fp8_e4m3 value;
    value.__x = bits;
    return static_cast<float>(value);
  }
  __nv_fp8_e5m2 value;
  value.__x = bits;
  return static_cast<float>(value);
}

// The fp8 byte of `format` the CPU makes of `value` x `scale`: rounded to nearest even and
// saturated to the format's largest finite value, as the probe's casts must write it.
inline uint8_t QuantizeToFp8(float value, float scale, Fp8Format format) {
  return __nv_cvt_float_to_fp8(value * scale, __NV_SATFINITE,
                               format == Fp8Format::kE4M3 ? __NV_E4M3 : __NV_E5M2);
}

// The values fp8 `bytes` stand for: each byte's value times the scale inverse.
inline std::vector<double> Dequantize(const std::vector<uint8_t>& bytes, Fp8Format format,
                                      double scale_inverse) {
  std::vector<double> values(bytes.size());
  for (size_t i = 0; i < bytes.size(); ++i)
    values[i] = Fp8ToDouble(bytes[i], format) * scale_inverse;
  return values;
}

// `count` fp8 bytes of values uniform in [-scale, scale), from `seed`.
inline std::vector<uint8_t> RandomFp8(int64_t count, uint32_t seed, Fp8Format format, float scale) {
  std::mt19937 random(seed);
  std::uniform_real_distribution<float> uniform(-scale, scale);
  std::vector<uint8_t> bytes(count);
  for (uint8_t& b : bytes) {
    const float v = uniform(random);
    b = format == Fp8Format::kE4M3 ? __nv_fp8_e4m3(v).__x : __nv_fp8_e5m2(v).__x;
  }
  return bytes;
}

// max |v| of bf16 values: the amax a cast of them records.
inline double MaxAbs(const std::vector<__nv_bfloat16>& values) {
  double amax = 0;
  for (__nv_bfloat16 v : values) {
    amax = std::max(amax, std::fabs(static_cast<double>(__bfloat162float(v))));
  }
  return amax;
}

// The fp8 GPU tests' layer on one tensor-parallel rank: 64 tokens, h 128: QKV 128 -> 192,
// attention output 128 -> 128, gate/up 128 -> 192, down 96 -> 128 (every dimension a multiple
// of 16, as cuBLASLt's fp8 GEMMs want).
inline ShardShapes SmallFp8Shapes(bool sequence_parallel) {
  ShardShapes x;
  x.micro_batch = 1;
  x.sequence = 64;
  x.sequence_per_rank = 64;
  x.tokens = 64;
  x.residual_tokens = 64;
  x.sequence_parallel = sequence_parallel;
  x.tensor_parallel = 1;
  x.context_parallel = 1;
  x.hidden = 128;
  x.ffn = 96;
  x.qkv = {64, 192, 128};
  x.attention_output = {64, 128, 128};
  x.gate_up = {64, 192, 128};
  x.down = {64, 128, 96};
  return x;
}

}  // namespace paratune

#endif  // PARATUNE_WORKER_CUDA_FP8_TEST_UTIL_H_
