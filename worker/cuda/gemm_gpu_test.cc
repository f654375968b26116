// cuBLASLt products of gemm.h against float64 products on the CPU: the three nn.Linear
// products, fp32 accumulation into an existing output, and a strided batch.
#include <vector>

#include "gtest/gtest.h"
#include "worker/cuda/gemm.h"
#include "worker/cuda/gpu_test_util.h"
#include "worker/probe/footprint_plan.h"

namespace paratune {
namespace {

using bf16 = __nv_bfloat16;

class GemmTest : public ::testing::Test {
 protected:
  void SetUp() override {
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

TEST_F(GemmTest, LinearProductsMatchTheReference) {
  // Shapes that are not multiples of the tensor-core tiles.
  const int64_t rows = 70, outputs = 136, inputs = 200;
  const std::vector<bf16> in = RandomBf16(rows * inputs, 1);
  const std::vector<bf16> weight = RandomBf16(outputs * inputs, 2);
  const std::vector<bf16> d_out = RandomBf16(rows * outputs, 3);
  std::vector<float> start(outputs * inputs, 0.25f);
  DeviceArray<bf16> d_in(in), d_weight(weight), d_dout(d_out), out(rows * outputs),
      d_in_grad(rows * inputs);
  DeviceArray<float> d_weight_grad(start);
  ASSERT_TRUE(gemm_
                  ->Run(LinearForward(d_in.get(), d_weight.get(), out.get(), rows, outputs, inputs),
                        nullptr)
                  .ok());
  ASSERT_TRUE(gemm_
                  ->Run(LinearInputGradient(d_dout.get(), d_weight.get(), d_in_grad.get(), rows,
                                            outputs, inputs),
                        nullptr)
                  .ok());
  ASSERT_TRUE(gemm_
                  ->Run(LinearWeightGradient(d_dout.get(), d_in.get(), d_weight_grad.get(), true,
                                             rows, outputs, inputs),
                        nullptr)
                  .ok());
  const std::vector<double> X = ToDouble(in), W = ToDouble(weight), DY = ToDouble(d_out);
  const std::vector<double> y = ReferenceProduct(
      rows, outputs, inputs, [&](int64_t i, int64_t p) { return X[i * inputs + p]; },
      [&](int64_t p, int64_t j) { return W[j * inputs + p]; });
  const std::vector<double> dx = ReferenceProduct(
      rows, inputs, outputs, [&](int64_t i, int64_t p) { return DY[i * outputs + p]; },
      [&](int64_t p, int64_t j) { return W[p * inputs + j]; });
  const std::vector<double> dw = ReferenceProduct(
      outputs, inputs, rows, [&](int64_t i, int64_t p) { return DY[p * outputs + i]; },
      [&](int64_t p, int64_t j) { return X[p * inputs + j]; },
      std::vector<double>(outputs * inputs, 0.25));
  EXPECT_LT(RelativeError(ToDouble(out.ToHost()), y), 1e-2);
  EXPECT_LT(RelativeError(ToDouble(d_in_grad.ToHost()), dx), 1e-2);
  EXPECT_LT(RelativeError(ToDouble(d_weight_grad.ToHost()), dw), 1e-3);
}

TEST_F(GemmTest, StridedBatchWithLeadingDimensions) {
  // Two batches of C[m, n] = alpha A[m, k] B[n, k]^T, A and B rows inside wider matrices and
  // C written into columns of a wider fp32 output, as attention's score products are.
  const int64_t m = 24, n = 40, k = 32, lda = 48, ldb = 64, ldc = 56, batch = 2;
  const int64_t stride_a = m * lda, stride_b = n * ldb, stride_c = m * ldc;
  const std::vector<bf16> a = RandomBf16(batch * stride_a, 4);
  const std::vector<bf16> b = RandomBf16(batch * stride_b, 5);
  DeviceArray<bf16> d_a(a), d_b(b);
  DeviceArray<float> d_c(std::vector<float>(batch * stride_c, 0.0f));
  GemmArgs g;
  g.transpose_b = true;
  g.m = m;
  g.n = n;
  g.k = k;
  g.a = d_a.get() + 8;
  g.lda = lda;
  g.b = d_b.get() + 16;
  g.ldb = ldb;
  g.c = d_c.get() + 8;
  g.ldc = ldc;
  g.c_type = GemmOutput::kFloat;
  g.alpha = 0.5f;
  g.batch = batch;
  g.stride_a = stride_a;
  g.stride_b = stride_b;
  g.stride_c = stride_c;
  ASSERT_TRUE(gemm_->Run(g, nullptr).ok());
  const std::vector<double> A = ToDouble(a), B = ToDouble(b);
  std::vector<double> expected(batch * stride_c, 0.0);
  for (int64_t s = 0; s < batch; ++s) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0;
        for (int64_t p = 0; p < k; ++p) {
          sum += A[s * stride_a + i * lda + 8 + p] * B[s * stride_b + j * ldb + 16 + p];
        }
        expected[s * stride_c + i * ldc + 8 + j] = 0.5 * sum;
      }
    }
  }
  EXPECT_LT(RelativeError(ToDouble(d_c.ToHost()), expected), 1e-3);
}

}  // namespace
}  // namespace paratune
