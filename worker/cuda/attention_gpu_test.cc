// Attention::Forward and Backward (one context rank) against a float64 causal GQA attention
// with rotary embeddings computed on the CPU: the chunked forward with query chunks smaller
// than the sequence, so that every chunk sees a different number of keys, and cuDNN's fused
// forward (whose log-sum-exp the chunked backward then uses).
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "worker/cuda/attention.h"
#include "worker/cuda/gpu_test_util.h"
#include "worker/probe/footprint_plan.h"

namespace paratune {
namespace {

using bf16 = __nv_bfloat16;

constexpr int64_t kSequences = 2, kTokens = 48, kKvHeads = 2, kHeadsPerKv = 2, kHeadDim = 32;
constexpr int64_t kRows = kSequences * kTokens;
constexpr int64_t kWidth = kKvHeads * (kHeadsPerKv + 2) * kHeadDim;
constexpr int64_t kQueryValues = kRows * kKvHeads * kHeadsPerKv * kHeadDim;

ShardShapes Shapes() {
  ShardShapes x;
  x.micro_batch = kSequences;
  x.sequence = kTokens;
  x.sequence_per_rank = kTokens;
  x.tokens = kRows;
  x.context_parallel = 1;
  x.tensor_parallel = 1;
  x.head_dim = kHeadDim;
  x.query_heads = kKvHeads * kHeadsPerKv;
  x.kv_heads = kKvHeads;
  return x;
}

// [token][head][d] vectors, heads numbered g * H + h for queries and g for keys and values.
struct Reference {
  std::vector<double> q, k, v, out, d_qkv;
};

void Rotate(double* x, int64_t position, double sign) {
  for (int64_t j = 0; j < kHeadDim / 2; ++j) {
    const double angle = sign * position * std::pow(kRopeBase, -2.0 * j / kHeadDim);
    const double a = x[j], b = x[j + kHeadDim / 2];
    x[j] = a * std::cos(angle) - b * std::sin(angle);
    x[j + kHeadDim / 2] = b * std::cos(angle) + a * std::sin(angle);
  }
}

Reference Compute(const std::vector<double>& qkv, const std::vector<double>& d_out) {
  const int64_t Q = kKvHeads * kHeadsPerKv, d = kHeadDim;
  const double scale = 1 / std::sqrt(static_cast<double>(d));
  Reference r;
  r.q.assign(kRows * Q * d, 0);
  r.k.assign(kRows * kKvHeads * d, 0);
  r.v.assign(kRows * kKvHeads * d, 0);
  for (int64_t t = 0; t < kRows; ++t) {
    for (int64_t g = 0; g < kKvHeads; ++g) {
      const double* in = &qkv[t * kWidth + g * (kHeadsPerKv + 2) * d];
      for (int64_t h = 0; h < kHeadsPerKv; ++h) {
        std::copy(in + h * d, in + (h + 1) * d, &r.q[(t * Q + g * kHeadsPerKv + h) * d]);
        Rotate(&r.q[(t * Q + g * kHeadsPerKv + h) * d], t % kTokens, 1);
      }
      std::copy(in + kHeadsPerKv * d, in + (kHeadsPerKv + 1) * d, &r.k[(t * kKvHeads + g) * d]);
      Rotate(&r.k[(t * kKvHeads + g) * d], t % kTokens, 1);
      std::copy(in + (kHeadsPerKv + 1) * d, in + (kHeadsPerKv + 2) * d,
                &r.v[(t * kKvHeads + g) * d]);
    }
  }
  r.out.assign(kRows * Q * d, 0);
  std::vector<double> dq(r.q.size(), 0), dk(r.k.size(), 0), dv(r.v.size(), 0);
  for (int64_t s = 0; s < kSequences; ++s) {
    for (int64_t head = 0; head < Q; ++head) {
      const int64_t g = head / kHeadsPerKv;
      for (int64_t i = 0; i < kTokens; ++i) {
        const int64_t qi = ((s * kTokens + i) * Q + head) * d;
        std::vector<double> p(i + 1);
        double most = -INFINITY, sum = 0;
        for (int64_t j = 0; j <= i; ++j) {
          double dot = 0;
          for (int64_t e = 0; e < d; ++e)
            dot += r.q[qi + e] * r.k[((s * kTokens + j) * kKvHeads + g) * d + e];
          p[j] = dot * scale;
          most = std::max(most, p[j]);
        }
        for (double& x : p) sum += (x = std::exp(x - most));
        for (double& x : p) x /= sum;
        double row_dot = 0;
        for (int64_t j = 0; j <= i; ++j) {
          for (int64_t e = 0; e < d; ++e) {
            r.out[qi + e] += p[j] * r.v[((s * kTokens + j) * kKvHeads + g) * d + e];
          }
        }
        for (int64_t e = 0; e < d; ++e) row_dot += d_out[qi + e] * r.out[qi + e];
        for (int64_t j = 0; j <= i; ++j) {
          const int64_t kj = ((s * kTokens + j) * kKvHeads + g) * d;
          double dp = 0;
          for (int64_t e = 0; e < d; ++e) {
            dv[kj + e] += p[j] * d_out[qi + e];
            dp += d_out[qi + e] * r.v[kj + e];
          }
          const double ds = p[j] * (dp - row_dot) * scale;
          for (int64_t e = 0; e < d; ++e) {
            dq[qi + e] += ds * r.k[kj + e];
            dk[kj + e] += ds * r.q[qi + e];
          }
        }
      }
    }
  }
  r.d_qkv.assign(qkv.size(), 0);
  for (int64_t t = 0; t < kRows; ++t) {
    for (int64_t g = 0; g < kKvHeads; ++g) {
      double* out = &r.d_qkv[t * kWidth + g * (kHeadsPerKv + 2) * d];
      for (int64_t h = 0; h < kHeadsPerKv; ++h) {
        std::copy(&dq[(t * Q + g * kHeadsPerKv + h) * d],
                  &dq[(t * Q + g * kHeadsPerKv + h + 1) * d], out + h * d);
        Rotate(out + h * d, t % kTokens, -1);
      }
      std::copy(&dk[(t * kKvHeads + g) * d], &dk[(t * kKvHeads + g + 1) * d],
                out + kHeadsPerKv * d);
      Rotate(out + kHeadsPerKv * d, t % kTokens, -1);
      std::copy(&dv[(t * kKvHeads + g) * d], &dv[(t * kKvHeads + g + 1) * d],
                out + (kHeadsPerKv + 1) * d);
    }
  }
  return r;
}

struct Kernel {
  int64_t query_chunk;
  bool fused;
};

class AttentionTest : public ::testing::TestWithParam<Kernel> {};

TEST_P(AttentionTest, ForwardAndBackwardMatchTheReference) {
  void* workspace = nullptr;
  ASSERT_EQ(cudaMalloc(&workspace, kGemmWorkspaceBytes), cudaSuccess);
  absl::StatusOr<std::unique_ptr<Gemm>> gemm = Gemm::Create(workspace, kGemmWorkspaceBytes);
  ASSERT_TRUE(gemm.ok()) << gemm.status();
  PhaseTimer timer(nullptr);
  Attention attention(gemm->get(), Shapes(), GetParam().query_chunk, nullptr, 0, nullptr, &timer);
  const int64_t score_values = kTokens * kTokens * kHeadsPerKv * kKvHeads;
  if (GetParam().fused) {
    ASSERT_TRUE(attention.SelectKernel(score_values * sizeof(float)).ok());
    ASSERT_STREQ(attention.forward_kernel(), "cudnn_fused") << attention.fallback_reason();
  }

  const std::vector<bf16> qkv = RandomBf16(kRows * kWidth, 1);
  const std::vector<bf16> d_out = RandomBf16(kQueryValues, 2);
  const int64_t kv_values = kRows * kKvHeads * kHeadDim;
  DeviceArray<bf16> d_qkv_in(qkv), d_dout(d_out), out(kQueryValues), d_qkv(kRows * kWidth),
      query(kQueryValues), key_value(2 * kv_values), heads(kQueryValues),
      query_gradient(kQueryValues), probabilities(score_values);
  DeviceArray<float> lse(kQueryValues / kHeadDim), scores(score_values),
      kv_gradients(2 * kv_values), row_sums(kQueryValues / kHeadDim);
  AttentionBuffers buffers;
  buffers.query = query.get();
  buffers.key_value = key_value.get();
  buffers.lse = lse.get();
  buffers.heads = heads.get();
  buffers.query_gradient = query_gradient.get();
  buffers.scores = scores.get();
  buffers.probabilities = probabilities.get();
  buffers.key_value_gradients = kv_gradients.get();
  buffers.row_sums = row_sums.get();
  ASSERT_TRUE(attention.Forward(d_qkv_in.get(), out.get(), buffers).ok());
  ASSERT_TRUE(attention.Backward(d_dout.get(), out.get(), d_qkv.get(), buffers).ok());

  const Reference reference = Compute(ToDouble(qkv), ToDouble(d_out));
  EXPECT_LT(RelativeError(ToDouble(out.ToHost()), reference.out), 1e-2);
  EXPECT_LT(RelativeError(ToDouble(d_qkv.ToHost()), reference.d_qkv), 3e-2);
  gemm->reset();
  cudaFree(workspace);
}

// One chunk per sequence, chunks of 16 tokens, a chunk size that does not divide it; cuDNN.
INSTANTIATE_TEST_SUITE_P(Kernels, AttentionTest,
                         ::testing::Values(Kernel{48, false}, Kernel{16, false}, Kernel{20, false},
                                           Kernel{16, true}));

// cuDNN builds its fused forward for the attention of Llama-3.1-8B (s 8192, 32 query and 8
// kv heads of 128) and of Llama-3.1-70B at tensor parallelism 8 (8 query heads, 1 kv head),
// within the probe's attention workspace; context parallelism falls back, saying why.
TEST(AttentionKernelTest, CudnnRunsLlamaShapesAndContextParallelismFallsBack) {
  PhaseTimer timer(nullptr);
  ShardShapes llama = Shapes();
  llama.micro_batch = 1;
  llama.sequence = llama.sequence_per_rank = 8192;
  llama.head_dim = 128;
  for (const auto& [query_heads, kv_heads] : {std::pair{32, 8}, std::pair{8, 1}}) {
    llama.query_heads = query_heads;
    llama.kv_heads = kv_heads;
    Attention attention(nullptr, llama, 1, nullptr, 0, nullptr, &timer);
    ASSERT_TRUE(attention.SelectKernel(kAttentionWorkspaceBytes / 2).ok());
    EXPECT_STREQ(attention.forward_kernel(), "cudnn_fused") << attention.fallback_reason();
  }
  llama.context_parallel = 2;
  llama.sequence_per_rank = 4096;
  Attention attention(nullptr, llama, 1, nullptr, 0, nullptr, &timer);
  ASSERT_TRUE(attention.SelectKernel(kAttentionWorkspaceBytes / 2).ok());
  EXPECT_STREQ(attention.forward_kernel(), "chunked");
  EXPECT_NE(attention.fallback_reason().find("context_parallel 2"), std::string::npos);
}

}  // namespace
}  // namespace paratune
