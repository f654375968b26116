// Helpers for the probe's GPU tests: device buffers filled from and read back into host
// vectors, seeded random bf16 data, and the relative error ||out - ref|| / ||ref|| against a
// float64 reference computed on the CPU (bf16 operands land between 1e-3 and 1e-2; a NaN
// never passes).
#ifndef PARATUNE_WORKER_CUDA_GPU_TEST_UTIL_H_
#define PARATUNE_WORKER_CUDA_GPU_TEST_UTIL_H_

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace paratune {

// Device memory holding `count` T, freed on destruction. A test assertion fails when CUDA
// does; tests run on one GPU at a time, so no copy is needed.
template <typename T>
class DeviceArray {
 public:
  explicit DeviceArray(int64_t count) : count_(count) {
    EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&data_), sizeof(T) * count), cudaSuccess);
    // Poisoned so that an element a kernel fails to write shows up as garbage.
    EXPECT_EQ(cudaMemset(data_, 0xff, sizeof(T) * count), cudaSuccess);
  }
  explicit DeviceArray(const std::vector<T>& host)
      : DeviceArray(static_cast<int64_t>(host.size())) {
    EXPECT_EQ(cudaMemcpy(data_, host.data(), sizeof(T) * count_, cudaMemcpyHostToDevice),
              cudaSuccess);
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  ~DeviceArray() { cudaFree(data_); }

  T* get() const { return data_; }
  std::vector<T> ToHost() const {
    std::vector<T> host(count_);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(host.data(), data_, sizeof(T) * count_, cudaMemcpyDeviceToHost),
              cudaSuccess);
    return host;
  }

 private:
  int64_t count_;
  T* data_ = nullptr;
};

// The fp32 value at byte `offset` of device bytes (a scale or amax inside a state buffer).
inline float FloatAt(const DeviceArray<uint8_t>& bytes, int64_t offset) {
  float value = 0;
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(&value, bytes.get() + offset, sizeof(value), cudaMemcpyDeviceToHost),
            cudaSuccess);
  return value;
}

// `count` values uniform in [-scale, scale), rounded to bf16, from `seed`.
inline std::vector<__nv_bfloat16> RandomBf16(int64_t count, uint32_t seed, float scale = 1.0f) {
  std::mt19937 random(seed);
  std::uniform_real_distribution<float> uniform(-scale, scale);
  std::vector<__nv_bfloat16> values(count);
  for (__nv_bfloat16& v : values) v = __float2bfloat16(uniform(random));
  return values;
}

inline std::vector<double> ToDouble(const std::vector<__nv_bfloat16>& values) {
  std::vector<double> out(values.size());
  for (size_t i = 0; i < values.size(); ++i) out[i] = __bfloat162float(values[i]);
  return out;
}

inline std::vector<double> ToDouble(const std::vector<float>& values) {
  return std::vector<double>(values.begin(), values.end());
}

// Row-major float64 reference: C[m, n] (+)= sum_k A(i, k) B(k, j), with A and B read through
// accessors so a test can hand in any layout (transposed, quantized).
template <typename AAt, typename BAt>
std::vector<double> ReferenceProduct(int64_t m, int64_t n, int64_t k, AAt a, BAt b,
                                     std::vector<double> c = {}) {
  if (c.empty()) c.assign(m * n, 0.0);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t p = 0; p < k; ++p) c[i * n + j] += a(i, p) * b(p, j);
    }
  }
  return c;
}

// ||out - reference|| / ||reference||; infinite when out holds a NaN.
inline double RelativeError(const std::vector<double>& out, const std::vector<double>& reference) {
  EXPECT_EQ(out.size(), reference.size());
  double difference = 0;
  double norm = 0;
  for (size_t i = 0; i < out.size() && i < reference.size(); ++i) {
    if (std::isnan(out[i])) return INFINITY;
    difference += (out[i] - reference[i]) * (out[i] - reference[i]);
    norm += reference[i] * reference[i];
  }
  return std::sqrt(difference / norm);
}

}  // namespace paratune

#endif  // PARATUNE_WORKER_CUDA_GPU_TEST_UTIL_H_
