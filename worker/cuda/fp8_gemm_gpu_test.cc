// fp8 casts and products (fp8_kernels.h, Gemm::RunFp8) on the GPU: the cast's values,
// transpose and amax against the CPU's conversion, the scale update against the recipe's
// CPU functions, and nn.Linear's three fp8 products against float64 products of the same
// quantized operands. Needs compute capability 8.9 or later (H100).
#include <cuda_fp8.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "worker/cuda/fp8_kernels.h"
#include "worker/cuda/fp8_test_util.h"
#include "worker/cuda/gemm.h"
#include "worker/cuda/gpu_test_util.h"
#include "worker/probe/footprint_plan.h"
#include "worker/probe/fp8_scaling.h"

namespace paratune {
namespace {

using bf16 = __nv_bfloat16;

// A bf16 tensor cast to fp8 on the GPU with the scale that maps its amax onto the format's
// largest value, with its transpose, and the dequantized values the GPU's product sees.
struct Quantized {
  Quantized(const std::vector<bf16>& values, int64_t rows, int64_t columns, Fp8Format format)
      : format(format),
        scale(DelayedScale(static_cast<float>(MaxAbs(values)), 1.0f, Fp8Max(format))),
        scale_inverse(std::vector<float>{1.0f / scale}),
        data(rows * columns),
        transposed(rows * columns) {
    DeviceArray<bf16> in(values);
    DeviceArray<float> device_scale(std::vector<float>{scale});
    DeviceArray<float> amax(std::vector<float>{0.0f});
    EXPECT_EQ(CastToFp8(in.get(), rows, columns, format, device_scale.get(), data.get(),
                        transposed.get(), amax.get(), nullptr, nullptr),
              cudaSuccess);
    // Dequantized as cuBLASLt does, by the fp32 scale inverse.
    const double factor = 1.0f / scale;
    for (uint8_t bits : data.ToHost()) dequantized.push_back(Fp8ToDouble(bits, format) * factor);
  }

  Fp8Operand Operand() const { return {data.get(), format, scale_inverse.get()}; }
  Fp8Operand Transposed() const { return {transposed.get(), format, scale_inverse.get()}; }

  Fp8Format format;
  float scale;
  DeviceArray<float> scale_inverse;
  DeviceArray<uint8_t> data;
  DeviceArray<uint8_t> transposed;
  std::vector<double> dequantized;
};

TEST(Fp8CastTest, ScaledSaturatedValuesTransposeAndAmax) {
  const int64_t rows = 45, columns = 70;  // not multiples of the 32 x 32 tiles
  for (Fp8Format format : {Fp8Format::kE4M3, Fp8Format::kE5M2}) {
    const std::vector<bf16> values = RandomBf16(rows * columns, 7, 3.0f);
    // Large enough that the largest values saturate.
    const float scale = Fp8Max(format) / 2.0f;
    DeviceArray<bf16> in(values);
    DeviceArray<float> device_scale(std::vector<float>{scale});
    DeviceArray<uint8_t> out(rows * columns), transposed(rows * columns);
    // A larger amax already in the slot (an earlier cast of the iteration) stays.
    DeviceArray<float> amax(std::vector<float>{0.5f}), larger(std::vector<float>{100.0f});
    DeviceArray<float> inverse(std::vector<float>{0.0f});
    ASSERT_EQ(CastToFp8(in.get(), rows, columns, format, device_scale.get(), out.get(),
                        transposed.get(), amax.get(), inverse.get(), nullptr),
              cudaSuccess);
    ASSERT_EQ(CastToFp8(in.get(), rows, columns, format, device_scale.get(), out.get(), nullptr,
                        larger.get(), nullptr, nullptr),
              cudaSuccess);
    const std::vector<uint8_t> fp8 = out.ToHost(), fp8_t = transposed.ToHost();
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < columns; ++c) {
        const float value = __bfloat162float(values[r * columns + c]);
        const uint8_t expected = QuantizeToFp8(value, scale, format);
        ASSERT_EQ(fp8[r * columns + c], expected) << r << ", " << c;
        ASSERT_EQ(fp8_t[c * rows + r], expected) << r << ", " << c;
        ASSERT_LE(std::fabs(Fp8ToDouble(expected, format)), Fp8Max(format));
      }
    }
    EXPECT_EQ(amax.ToHost()[0], static_cast<float>(MaxAbs(values)));
    EXPECT_EQ(larger.ToHost()[0], 100.0f);
    EXPECT_EQ(inverse.ToHost()[0], 1.0f / scale);
    // The transpose of fp8 bytes as they are.
    DeviceArray<uint8_t> back(rows * columns);
    ASSERT_EQ(TransposeFp8(transposed.get(), columns, rows, back.get(), nullptr), cudaSuccess);
    EXPECT_EQ(back.ToHost(), fp8);
  }
}

TEST(Fp8CastTest, ScaleUpdateMatchesTheRecipe) {
  const int64_t length = 5, tensors = 3;
  std::vector<float> history(length * tensors);
  for (size_t i = 0; i < history.size(); ++i) history[i] = static_cast<float>((i * 7) % 11);
  history[1] = 0;  // tensor 1's current slot: nothing measured this iteration
  std::vector<float> scale = {1.0f, 2.0f, 4.0f};
  std::vector<float> scale_inverse(tensors * kFp8ScaleInverseStride, 0.0f);
  DeviceArray<float> d_history(history), d_scale(scale), d_scale_inverse(scale_inverse);
  const float scaled_max = ScaledFp8Max(Fp8Format::kE5M2, 1);
  ASSERT_EQ(UpdateFp8Scales(d_history.get(), length, tensors, scaled_max, d_scale.get(),
                            d_scale_inverse.get(), nullptr),
            cudaSuccess);
  for (int64_t t = 0; t < tensors; ++t) {
    UpdateDelayedScaling(history.data() + t, length, tensors, scaled_max, &scale[t],
                         &scale_inverse[t * kFp8ScaleInverseStride]);
  }
  EXPECT_EQ(d_history.ToHost(), history);
  EXPECT_EQ(d_scale.ToHost(), scale);
  EXPECT_EQ(d_scale_inverse.ToHost(), scale_inverse);
}

class Fp8GemmTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_GE(ComputeCapability(), 89) << "fp8 tensor cores need compute capability 8.9";
    ASSERT_EQ(cudaMalloc(&workspace_, kGemmWorkspaceBytes), cudaSuccess);
    absl::StatusOr<std::unique_ptr<Gemm>> gemm = Gemm::Create(workspace_, kGemmWorkspaceBytes);
    ASSERT_TRUE(gemm.ok()) << gemm.status();
    gemm_ = *std::move(gemm);
  }
  void TearDown() override {
    gemm_.reset();
    cudaFree(workspace_);
  }

  void* workspace_ = nullptr;
  std::unique_ptr<Gemm> gemm_;
};

TEST_F(Fp8GemmTest, LinearProductsMatchTheReferenceOfTheQuantizedOperands) {
  const int64_t rows = 80, outputs = 96, inputs = 144;
  const Quantized in(RandomBf16(rows * inputs, 1), rows, inputs, HybridFormat(false));
  const Quantized weight(RandomBf16(outputs * inputs, 2, 0.05f), outputs, inputs,
                         HybridFormat(false));
  const Quantized d_out(RandomBf16(rows * outputs, 3, 1e-3f), rows, outputs, HybridFormat(true));
  DeviceArray<bf16> out(rows * outputs), d_in(rows * inputs);
  DeviceArray<float> d_weight(std::vector<float>(outputs * inputs, 0.25f));
  absl::Status status = gemm_->RunFp8(
      Fp8LinearForward(in.Operand(), weight.Operand(), out.get(), rows, outputs, inputs), nullptr);
  ASSERT_TRUE(status.ok()) << status;
  status = gemm_->RunFp8(Fp8LinearInputGradient(d_out.Operand(), weight.Transposed(), d_in.get(),
                                                rows, outputs, inputs),
                         nullptr);
  ASSERT_TRUE(status.ok()) << status;
  status = gemm_->RunFp8(Fp8LinearWeightGradient(d_out.Transposed(), in.Transposed(),
                                                 d_weight.get(), true, rows, outputs, inputs),
                         nullptr);
  ASSERT_TRUE(status.ok()) << status;

  const std::vector<double>&X = in.dequantized, &W = weight.dequantized, &DY = d_out.dequantized;
  const std::vector<double> y = ReferenceProduct(
      rows, outputs, inputs, [&](int64_t i, int64_t p) { return X[i * inputs + p]; },
      [&](int64_t p, int64_t j) { return W[j * inputs + p]; });
  const std::vector<double> dx = ReferenceProduct(
      rows, inputs, outputs, [&](int64_t i, int64_t p) { return DY[i * outputs + p]; },
      [&](int64_t p, int64_t j) { return W[p * inputs + j]; });
  std::vector<double> dw = ReferenceProduct(
      outputs, inputs, rows, [&](int64_t i, int64_t p) { return DY[p * outputs + i]; },
      [&](int64_t p, int64_t j) { return X[p * inputs + j]; });
  // Compared without the 0.25 start, which would hide errors in the small gradient.
  std::vector<double> measured_dw = ToDouble(d_weight.ToHost());
  for (double& v : measured_dw) v -= 0.25;
  // The operands are exactly the reference's; what remains is the bf16 rounding of the
  // outputs and the fp32 (or fast) accumulation.
  EXPECT_LT(RelativeError(ToDouble(out.ToHost()), y), 1e-2);
  EXPECT_LT(RelativeError(ToDouble(d_in.ToHost()), dx), 1e-2);
  EXPECT_LT(RelativeError(measured_dw, dw), 1e-3);
}

// The products of the probe's sizes with both scale inverses in slots of one array, as the
// probe keeps them: on an H200 every such product failed while the inverses were 4 bytes apart.
TEST_F(Fp8GemmTest, LargeProductsReadScaleInversesFromTheirSlots) {
  const int64_t rows = 2048, outputs = 4096, inputs = 2048;
  DeviceArray<uint8_t> in(std::vector<uint8_t>(rows * inputs, 0x38));  // E4M3 1.0
  DeviceArray<uint8_t> weight(std::vector<uint8_t>(outputs * inputs, 0x38));
  std::vector<float> inverses(3 * kFp8ScaleInverseStride, 0.0f);
  inverses[kFp8ScaleInverseStride] = 0.5f;
  inverses[2 * kFp8ScaleInverseStride] = 0.25f;
  DeviceArray<float> scale_inverses(inverses);
  DeviceArray<bf16> out(rows * outputs);
  const absl::Status status = gemm_->RunFp8(
      Fp8LinearForward(
          {in.get(), Fp8Format::kE4M3, scale_inverses.get() + kFp8ScaleInverseStride},
          {weight.get(), Fp8Format::kE4M3, scale_inverses.get() + 2 * kFp8ScaleInverseStride},
          out.get(), rows, outputs, inputs),
      nullptr);
  ASSERT_TRUE(status.ok()) << status;
  const std::vector<double> values = ToDouble(out.ToHost());
  // Every output is the sum of `inputs` products 1 x 1, dequantized by 0.5 x 0.25.
  for (double v : {values.front(), values[values.size() / 2], values.back()}) {
    EXPECT_EQ(v, inputs * 0.125);
  }
}

TEST_F(Fp8GemmTest, RefusesWhatCublasLtCannotMultiply) {
  const Quantized a(RandomBf16(32 * 32, 4), 32, 32, Fp8Format::kE5M2);
  DeviceArray<bf16> c(32 * 32);
  Fp8GemmArgs g = Fp8LinearForward(a.Operand(), a.Operand(), c.get(), 32, 32, 32);
  EXPECT_EQ(gemm_->RunFp8(g, nullptr).code(), absl::StatusCode::kInvalidArgument);
  g.b.format = Fp8Format::kE4M3;
  g.k = 24;
  EXPECT_EQ(gemm_->RunFp8(g, nullptr).code(), absl::StatusCode::kInvalidArgument);
  g.k = 32;
  ASSERT_TRUE(gemm_->RunFp8(g, nullptr).ok());
  g.a.scale_inverse += 1;  // 4 bytes into its array
  const absl::Status unaligned = gemm_->RunFp8(g, nullptr);
  EXPECT_EQ(unaligned.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(unaligned.message(), ::testing::HasSubstr("a.scale_inverse"));
}

}  // namespace
}  // namespace paratune
