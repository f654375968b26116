// The mixture-of-experts kernels against float64 references computed on the CPU, on random
// inputs: the router's top-k and its gradient (checked by central differences of the CPU
// forward), the balanced permutation built from the routing it stands for (each expert's
// copies listed in row order), the chunk sort and the weighted SwiGLU.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "worker/cuda/gpu_test_util.h"
#include "worker/cuda/moe_kernels.h"

namespace paratune {
namespace {

using bf16 = __nv_bfloat16;

constexpr double kBf16Tolerance = 1e-2;
constexpr double kFloatTolerance = 1e-4;

// The top-k experts of a row of logits, by descending logit, and their probabilities under
// `score`.
struct TopK {
  std::vector<int32_t> indices;
  std::vector<double> probabilities;
};

TopK ReferenceTopK(const std::vector<double>& logits, int64_t top_k, RouterScoreFunction score) {
  std::vector<int32_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  TopK result;
  result.indices.assign(order.begin(), order.begin() + top_k);
  double sum = 0;
  for (int32_t e : result.indices) {
    const double value = score == RouterScoreFunction::kSoftmax ? std::exp(logits[e])
                                                                : 1 / (1 + std::exp(-logits[e]));
    result.probabilities.push_back(value);
    sum += value;
  }
  if (score == RouterScoreFunction::kSigmoid && top_k == 1) sum = 1;
  for (double& p : result.probabilities) p /= sum;
  return result;
}

// Rows of distinct logits (multiples of 1/16, exact in bf16, shuffled), so that the top k
// and their order are unambiguous and a small step of one logit changes neither.
std::vector<bf16> DistinctLogits(int64_t rows, int64_t experts, uint32_t seed) {
  std::mt19937 random(seed);
  std::vector<bf16> logits;
  std::vector<int64_t> order(experts);
  for (int64_t r = 0; r < rows; ++r) {
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), random);
    for (int64_t e = 0; e < experts; ++e) {
      logits.push_back(__float2bfloat16(static_cast<float>(order[e] - experts / 2) / 16.0f));
    }
  }
  return logits;
}

void ExpectRouter(int64_t experts, int64_t top_k, RouterScoreFunction score, uint32_t seed) {
  const int64_t rows = 37;
  const std::vector<bf16> logits = DistinctLogits(rows, experts, seed);
  const std::vector<bf16> d_p_bf16 = RandomBf16(rows * top_k, seed + 1);
  std::vector<float> d_p(rows * top_k);
  for (int64_t i = 0; i < rows * top_k; ++i) d_p[i] = __bfloat162float(d_p_bf16[i]);
  DeviceArray<bf16> d_logits(logits), d_logits_gradient(rows * experts);
  DeviceArray<float> d_probabilities(rows * top_k), d_probabilities_gradient(d_p);
  DeviceArray<int32_t> d_indices(rows * top_k);
  ASSERT_EQ(RouterTopK(d_logits.get(), d_probabilities.get(), d_indices.get(), rows, experts, top_k,
                       score, nullptr),
            cudaSuccess);
  ASSERT_EQ(RouterTopKBackward(d_logits.get(), d_probabilities.get(), d_indices.get(),
                               d_probabilities_gradient.get(), d_logits_gradient.get(), rows,
                               experts, top_k, score, nullptr),
            cudaSuccess);
  const std::vector<double> all = ToDouble(logits);
  std::vector<int32_t> indices;
  std::vector<double> probabilities, gradient(rows * experts, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<double> row(all.begin() + r * experts, all.begin() + (r + 1) * experts);
    const TopK top = ReferenceTopK(row, top_k, score);
    indices.insert(indices.end(), top.indices.begin(), top.indices.end());
    probabilities.insert(probabilities.end(), top.probabilities.begin(), top.probabilities.end());
    // d logits = sum_j d_p_j dp_j/dl, by central differences of the CPU forward over the
    // chosen experts (neither the choice nor its order changes for a step this small).
    const double step = 1e-6;
    for (int32_t e : top.indices) {
      std::vector<double> up = row, down = row;
      up[e] += step;
      down[e] -= step;
      const TopK plus = ReferenceTopK(up, top_k, score), minus = ReferenceTopK(down, top_k, score);
      double derivative = 0;
      for (int64_t j = 0; j < top_k; ++j) {
        derivative +=
            d_p[r * top_k + j] * (plus.probabilities[j] - minus.probabilities[j]) / (2 * step);
      }
      gradient[r * experts + e] = derivative;
    }
  }
  EXPECT_EQ(d_indices.ToHost(), indices);
  EXPECT_LT(RelativeError(ToDouble(d_probabilities.ToHost()), probabilities), kFloatTolerance);
  EXPECT_LT(RelativeError(ToDouble(d_logits_gradient.ToHost()), gradient), kBf16Tolerance);
}

TEST(MoeKernelsTest, RouterSoftmaxTopKAndItsGradient) {
  ExpectRouter(/*experts=*/16, /*top_k=*/4, RouterScoreFunction::kSoftmax, 11);
  ExpectRouter(/*experts=*/128, /*top_k=*/8, RouterScoreFunction::kSoftmax, 12);
  ExpectRouter(/*experts=*/8, /*top_k=*/2, RouterScoreFunction::kSoftmax, 13);
}

TEST(MoeKernelsTest, RouterSigmoidTopKAndItsGradient) {
  ExpectRouter(/*experts=*/16, /*top_k=*/1, RouterScoreFunction::kSigmoid, 14);
  ExpectRouter(/*experts=*/16, /*top_k=*/2, RouterScoreFunction::kSigmoid, 15);
}

// PermuteBalanced, UnpermuteBalanced and UnpermuteProbabilities with `capacity` slots per
// expert against the routing they stand for: copy c = r k + j to expert c mod E; the permuted
// rows list expert 0's copies in row order, then expert 1's, ..., each expert's first
// `capacity` copies (the rest dropped: no row gets them back) and then zero rows of
// probability 0 up to its capacity.
void ExpectBalancedPermutation(int64_t capacity) {
  SCOPED_TRACE(capacity);
  const int64_t rows = 24, hidden = 64, top_k = 2, experts = 8;
  const int64_t copies = rows * top_k;
  const int64_t slots = experts * capacity;
  const std::vector<bf16> tokens = RandomBf16(rows * hidden, 21);
  const std::vector<bf16> probabilities_bf16 = RandomBf16(copies, 22);
  std::vector<float> probabilities(copies);
  for (int64_t c = 0; c < copies; ++c) probabilities[c] = __bfloat162float(probabilities_bf16[c]);
  DeviceArray<bf16> d_tokens(tokens), d_permuted(slots * hidden), d_out(rows * hidden);
  DeviceArray<float> d_probabilities(probabilities), d_permuted_probabilities(slots),
      d_back(copies);
  ASSERT_EQ(PermuteBalanced(d_tokens.get(), d_probabilities.get(), d_permuted.get(),
                            d_permuted_probabilities.get(), rows, hidden, top_k, experts, capacity,
                            nullptr),
            cudaSuccess);
  ASSERT_EQ(UnpermuteBalanced(d_permuted.get(), d_out.get(), rows, hidden, top_k, experts, capacity,
                              nullptr),
            cudaSuccess);
  ASSERT_EQ(UnpermuteProbabilities(d_permuted_probabilities.get(), d_back.get(), rows, top_k,
                                   experts, capacity, nullptr),
            cudaSuccess);
  const std::vector<double> token_values = ToDouble(tokens);
  std::vector<double> permuted(slots * hidden, 0.0), permuted_probabilities(slots, 0.0),
      summed(rows * hidden, 0.0);
  std::vector<float> back(copies, 0.0f);
  for (int64_t e = 0; e < experts; ++e) {
    int64_t slot = 0;
    for (int64_t c = e; c < copies && slot < capacity; c += experts, ++slot) {
      const int64_t position = e * capacity + slot;
      permuted_probabilities[position] = probabilities[c];
      back[c] = probabilities[c];
      for (int64_t i = 0; i < hidden; ++i) {
        permuted[position * hidden + i] = token_values[c / top_k * hidden + i];
        summed[c / top_k * hidden + i] += token_values[c / top_k * hidden + i];
      }
    }
  }
  EXPECT_EQ(RelativeError(ToDouble(d_permuted.ToHost()), permuted), 0);
  EXPECT_EQ(RelativeError(ToDouble(d_permuted_probabilities.ToHost()), permuted_probabilities), 0);
  EXPECT_LT(RelativeError(ToDouble(d_out.ToHost()), summed), kBf16Tolerance);
  EXPECT_EQ(d_back.ToHost(), back);
  // Without probabilities (the backward of the sum of copies) the tokens alone, the same bytes.
  DeviceArray<bf16> d_gradients(slots * hidden);
  ASSERT_EQ(PermuteBalanced(d_tokens.get(), nullptr, d_gradients.get(), nullptr, rows, hidden,
                            top_k, experts, capacity, nullptr),
            cudaSuccess);
  EXPECT_EQ(RelativeError(ToDouble(d_gradients.ToHost()), permuted), 0);
}

TEST(MoeKernelsTest, BalancedPermutationSortsCopiesByExpertInRowOrder) {
  // 24 rows x top-2 over 8 experts: 6 copies each, dropless; a capacity of 4 drops two of each
  // expert's copies, one of 9 pads three slots.
  ExpectBalancedPermutation(6);
  ExpectBalancedPermutation(4);
  ExpectBalancedPermutation(9);
  // Copies that do not divide evenly over the experts, and no capacity, are refused.
  DeviceArray<bf16> d_tokens(3 * 64), d_permuted(3 * 64);
  EXPECT_EQ(
      PermuteBalanced(d_tokens.get(), nullptr, d_permuted.get(), nullptr, 3, 64, 1, 8, 1, nullptr),
      cudaErrorInvalidValue);
  EXPECT_EQ(
      PermuteBalanced(d_tokens.get(), nullptr, d_permuted.get(), nullptr, 8, 8, 1, 8, 0, nullptr),
      cudaErrorInvalidValue);
}

TEST(MoeKernelsTest, SortChunksGroupsChunksByLocalExpertAndBack) {
  const int64_t groups = 3, local_experts = 4, chunk_rows = 5, width = 8;
  const int64_t values = groups * local_experts * chunk_rows * width;
  const std::vector<bf16> in = RandomBf16(values, 31);
  DeviceArray<bf16> d_in(in), d_sorted(values), d_back(values);
  ASSERT_EQ(
      SortChunksBf16(d_in.get(), d_sorted.get(), groups, local_experts, chunk_rows, width, nullptr),
      cudaSuccess);
  ASSERT_EQ(SortChunksBf16(d_sorted.get(), d_back.get(), local_experts, groups, chunk_rows, width,
                           nullptr),
            cudaSuccess);
  const std::vector<double> in_values = ToDouble(in);
  std::vector<double> sorted;
  const int64_t chunk = chunk_rows * width;
  for (int64_t e = 0; e < local_experts; ++e) {
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t first = (g * local_experts + e) * chunk;
      sorted.insert(sorted.end(), in_values.begin() + first, in_values.begin() + first + chunk);
    }
  }
  EXPECT_EQ(RelativeError(ToDouble(d_sorted.ToHost()), sorted), 0);
  EXPECT_EQ(RelativeError(ToDouble(d_back.ToHost()), in_values), 0);
  const std::vector<float> probabilities(groups * local_experts * chunk_rows, 0.25f);
  DeviceArray<float> d_probabilities(probabilities), d_sorted_probabilities(probabilities.size());
  ASSERT_EQ(SortChunksFloat(d_probabilities.get(), d_sorted_probabilities.get(), groups,
                            local_experts, chunk_rows, 1, nullptr),
            cudaSuccess);
  EXPECT_EQ(d_sorted_probabilities.ToHost(), probabilities);
}

TEST(MoeKernelsTest, WeightedSwigluForwardAndBackward) {
  const int64_t rows = 19, width = 300;
  const std::vector<bf16> gate_up = RandomBf16(rows * 2 * width, 41, 3.0f);
  const std::vector<bf16> d_out = RandomBf16(rows * width, 42);
  const std::vector<bf16> p_bf16 = RandomBf16(rows, 43);
  std::vector<float> p(rows);
  for (int64_t r = 0; r < rows; ++r) p[r] = __bfloat162float(p_bf16[r]);
  DeviceArray<bf16> d_gate_up(gate_up), d_d_out(d_out), d_y(rows * width),
      d_d_gate_up(rows * 2 * width);
  DeviceArray<float> d_p(p), d_d_p(rows);
  ASSERT_EQ(WeightedSwigluForward(d_gate_up.get(), d_p.get(), d_y.get(), rows, width, nullptr),
            cudaSuccess);
  ASSERT_EQ(WeightedSwigluBackward(d_gate_up.get(), d_p.get(), d_d_out.get(), d_d_gate_up.get(),
                                   d_d_p.get(), rows, width, nullptr),
            cudaSuccess);
  const std::vector<double> gu = ToDouble(gate_up), dy = ToDouble(d_out);
  std::vector<double> y(rows * width), d_gu(rows * 2 * width), dp(rows, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < width; ++c) {
      const double g = gu[r * 2 * width + c], u = gu[r * 2 * width + width + c];
      const double s = 1 / (1 + std::exp(-g));
      const double grad = dy[r * width + c];
      y[r * width + c] = g * s * u * p[r];
      d_gu[r * 2 * width + c] = grad * p[r] * u * s * (1 + g * (1 - s));
      d_gu[r * 2 * width + width + c] = grad * p[r] * g * s;
      dp[r] += grad * g * s * u;
    }
  }
  EXPECT_LT(RelativeError(ToDouble(d_y.ToHost()), y), kBf16Tolerance);
  EXPECT_LT(RelativeError(ToDouble(d_d_gate_up.ToHost()), d_gu), kBf16Tolerance);
  EXPECT_LT(RelativeError(ToDouble(d_d_p.ToHost()), dp), kFloatTolerance);
}

}  // namespace
}  // namespace paratune
