// The probe's kernels against float64 references computed on the CPU, on random inputs.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "gtest/gtest.h"
#include "worker/cuda/attention_kernels.h"
#include "worker/cuda/fill_kernels.h"
#include "worker/cuda/fill_values.h"
#include "worker/cuda/gpu_test_util.h"
#include "worker/cuda/loss_kernels.h"
#include "worker/cuda/mlp_kernels.h"
#include "worker/cuda/norm_kernels.h"
#include "worker/cuda/optimizer_kernels.h"

namespace paratune {
namespace {

using bf16 = __nv_bfloat16;

constexpr double kBf16Tolerance = 1e-2;
constexpr double kFloatTolerance = 1e-4;

TEST(NormKernelsTest, RmsNormForwardAndBackward) {
  const int64_t rows = 37, hidden = 1000;
  const std::vector<bf16> x = RandomBf16(rows * hidden, 1);
  const std::vector<bf16> w = RandomBf16(hidden, 2);
  const std::vector<bf16> dy = RandomBf16(rows * hidden, 3);
  const std::vector<bf16> residual = RandomBf16(rows * hidden, 4);
  DeviceArray<bf16> d_x(x), d_w(w), d_dy(dy), d_residual(residual), d_y(rows * hidden),
      d_out(rows * hidden), d_alone(rows * hidden);
  DeviceArray<float> d_rstd(rows), d_dw(std::vector<float>(hidden, 0.5f));
  ASSERT_EQ(RmsNormForward(d_x.get(), d_w.get(), d_y.get(), d_rstd.get(), rows, hidden, nullptr),
            cudaSuccess);
  ASSERT_EQ(RmsNormBackward(d_x.get(), d_w.get(), d_rstd.get(), d_dy.get(), d_residual.get(),
                            d_out.get(), rows, hidden, nullptr),
            cudaSuccess);
  ASSERT_EQ(RmsNormBackward(d_x.get(), d_w.get(), d_rstd.get(), d_dy.get(), nullptr, d_alone.get(),
                            rows, hidden, nullptr),
            cudaSuccess);
  ASSERT_EQ(RmsNormWeightGradient(d_x.get(), d_rstd.get(), d_dy.get(), d_dw.get(), true, rows,
                                  hidden, nullptr),
            cudaSuccess);
  const std::vector<double> X = ToDouble(x), W = ToDouble(w), DY = ToDouble(dy),
                            RES = ToDouble(residual);
  std::vector<double> y(rows * hidden), out(rows * hidden), rstd(rows), dw(hidden, 0.5);
  for (int64_t r = 0; r < rows; ++r) {
    double squares = 0;
    for (int64_t c = 0; c < hidden; ++c) squares += X[r * hidden + c] * X[r * hidden + c];
    rstd[r] = 1 / std::sqrt(squares / hidden + kRmsNormEpsilon);
    double dot = 0;
    for (int64_t c = 0; c < hidden; ++c) {
      const int64_t i = r * hidden + c;
      y[i] = X[i] * rstd[r] * W[c];
      dot += W[c] * DY[i] * X[i] * rstd[r];
      dw[c] += DY[i] * X[i] * rstd[r];
    }
    for (int64_t c = 0; c < hidden; ++c) {
      const int64_t i = r * hidden + c;
      out[i] = RES[i] + rstd[r] * (W[c] * DY[i] - X[i] * rstd[r] * dot / hidden);
    }
  }
  EXPECT_LT(RelativeError(ToDouble(d_y.ToHost()), y), kBf16Tolerance);
  EXPECT_LT(RelativeError(ToDouble(d_rstd.ToHost()), rstd), kFloatTolerance);
  EXPECT_LT(RelativeError(ToDouble(d_out.ToHost()), out), kBf16Tolerance);
  EXPECT_LT(RelativeError(ToDouble(d_dw.ToHost()), dw), kFloatTolerance);
  std::vector<double> alone(rows * hidden);
  for (int64_t i = 0; i < rows * hidden; ++i) alone[i] = out[i] - RES[i];
  EXPECT_LT(RelativeError(ToDouble(d_alone.ToHost()), alone), kBf16Tolerance);
}

TEST(NormKernelsTest, AddBf16Adds) {
  const int64_t rows = 3, hidden = 256;
  const std::vector<bf16> a = RandomBf16(rows * hidden, 5), b = RandomBf16(rows * hidden, 6);
  DeviceArray<bf16> d_a(a), d_b(b), d_sum(rows * hidden);
  ASSERT_EQ(AddBf16(d_a.get(), d_b.get(), d_sum.get(), rows * hidden, nullptr), cudaSuccess);
  std::vector<double> sum(rows * hidden);
  for (int64_t i = 0; i < rows * hidden; ++i) {
    sum[i] = ToDouble(a)[i] + ToDouble(b)[i];
  }
  EXPECT_LT(RelativeError(ToDouble(d_sum.ToHost()), sum), kBf16Tolerance);
}

TEST(MlpKernelsTest, SwigluForwardAndBackward) {
  const int64_t rows = 19, width = 333;
  const std::vector<bf16> gate_up = RandomBf16(rows * 2 * width, 7, 3.0f);
  const std::vector<bf16> d_out = RandomBf16(rows * width, 8);
  DeviceArray<bf16> g(gate_up), dout(d_out), out(rows * width), dgu(rows * 2 * width);
  ASSERT_EQ(SwigluForward(g.get(), out.get(), rows, width, nullptr), cudaSuccess);
  ASSERT_EQ(SwigluBackward(g.get(), dout.get(), dgu.get(), rows, width, nullptr), cudaSuccess);
  const std::vector<double> GU = ToDouble(gate_up), DO = ToDouble(d_out);
  std::vector<double> y(rows * width), dy(rows * 2 * width);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < width; ++c) {
      const double gate = GU[r * 2 * width + c], up = GU[r * 2 * width + width + c];
      const double sigmoid = 1 / (1 + std::exp(-gate));
      y[r * width + c] = gate * sigmoid * up;
      dy[r * 2 * width + c] = DO[r * width + c] * up * sigmoid * (1 + gate * (1 - sigmoid));
      dy[r * 2 * width + width + c] = DO[r * width + c] * gate * sigmoid;
    }
  }
  EXPECT_LT(RelativeError(ToDouble(out.ToHost()), y), kBf16Tolerance);
  EXPECT_LT(RelativeError(ToDouble(dgu.ToHost()), dy), kBf16Tolerance);
}

// Attention layouts of attention_kernels.h on a small case with context parallelism (rank 1
// of 2), so the positions of both halves are exercised.
class AttentionKernelsTest : public ::testing::Test {
 protected:
  AttentionKernelsTest() {
    dims_.sequences = 2;
    dims_.tokens_per_sequence = 8;
    dims_.kv_heads = 2;
    dims_.heads_per_kv = 3;
    dims_.head_dim = 16;
    positions_.sequence = 16;
    positions_.context_parallel = 2;
    positions_.context_rank = 1;
  }
  int64_t Tokens() const { return dims_.sequences * dims_.tokens_per_sequence; }
  int64_t Width() const { return dims_.kv_heads * (dims_.heads_per_kv + 2) * dims_.head_dim; }
  int64_t Position(int64_t i) const {
    const int64_t chunk = 4;  // s / 2c
    return i < chunk ? 1 * chunk + i : (4 - 1 - 1) * chunk + (i - chunk);
  }

  AttentionDims dims_;
  TokenPositions positions_;
};

TEST_F(AttentionKernelsTest, RopeSplitRotatesQueriesAndKeysByPosition) {
  const std::vector<bf16> qkv = RandomBf16(Tokens() * Width(), 9);
  const int64_t per_kv = Tokens() * dims_.kv_heads * dims_.head_dim;
  DeviceArray<bf16> d_qkv(qkv), d_query(per_kv * dims_.heads_per_kv), d_kv(2 * per_kv);
  ASSERT_EQ(RopeSplit(d_qkv.get(), d_query.get(), d_kv.get(), dims_, positions_, nullptr),
            cudaSuccess);
  const std::vector<double> in = ToDouble(qkv);
  const std::vector<double> query = ToDouble(d_query.ToHost());
  const std::vector<double> kv = ToDouble(d_kv.ToHost());
  const int64_t d = dims_.head_dim, H = dims_.heads_per_kv, G = dims_.kv_heads,
                n = dims_.tokens_per_sequence;
  std::vector<double> expected_query(query.size()), expected_kv(kv.size());
  for (int64_t t = 0; t < Tokens(); ++t) {
    const int64_t seq = t / n, i = t % n, pos = Position(i);
    for (int64_t g = 0; g < G; ++g) {
      for (int64_t slot = 0; slot < H + 2; ++slot) {
        const double* x = &in[t * Width() + (g * (H + 2) + slot) * d];
        double* out =
            slot < H ? &expected_query[(((seq * G + g) * n + i) * H + slot) * d]
                     : &expected_kv[((((slot - H) * dims_.sequences + seq) * G + g) * n + i) * d];
        for (int64_t j = 0; j < d / 2; ++j) {
          const double angle = pos * std::pow(kRopeBase, -2.0 * j / d);
          const bool rotate = slot <= H;
          out[j] = rotate ? x[j] * std::cos(angle) - x[j + d / 2] * std::sin(angle) : x[j];
          out[j + d / 2] =
              rotate ? x[j + d / 2] * std::cos(angle) + x[j] * std::sin(angle) : x[j + d / 2];
        }
      }
    }
  }
  EXPECT_LT(RelativeError(query, expected_query), kBf16Tolerance);
  EXPECT_LT(RelativeError(kv, expected_kv), kBf16Tolerance);

  // The backward rotation undoes the forward one: rotations are orthogonal.
  std::vector<float> kv_float(kv.begin(), kv.end());
  DeviceArray<float> d_kv_float(kv_float);
  DeviceArray<bf16> d_back(Tokens() * Width());
  ASSERT_EQ(
      RopeSplitBackward(d_query.get(), d_kv_float.get(), d_back.get(), dims_, positions_, nullptr),
      cudaSuccess);
  EXPECT_LT(RelativeError(ToDouble(d_back.ToHost()), in), kBf16Tolerance);
}

TEST_F(AttentionKernelsTest, HeadsAndTokensLayoutsRoundTrip) {
  const int64_t count = Tokens() * dims_.kv_heads * dims_.heads_per_kv * dims_.head_dim;
  const std::vector<bf16> tokens = RandomBf16(count, 10);
  DeviceArray<bf16> d_tokens(tokens), d_heads(count), d_back(count);
  ASSERT_EQ(TokensToHeads(d_tokens.get(), d_heads.get(), dims_, nullptr), cudaSuccess);
  ASSERT_EQ(HeadsToTokens(d_heads.get(), d_back.get(), dims_, nullptr), cudaSuccess);
  EXPECT_EQ(RelativeError(ToDouble(d_back.ToHost()), ToDouble(tokens)), 0);
  // Token 5 of sequence 1, kv head 1, head 2 moves to its query-layout place.
  const std::vector<bf16> heads = d_heads.ToHost();
  const int64_t d = dims_.head_dim, H = dims_.heads_per_kv, G = dims_.kv_heads;
  const int64_t token = 1 * dims_.tokens_per_sequence + 5;
  EXPECT_EQ(__bfloat162float(heads[(((1 * G + 1) * dims_.tokens_per_sequence + 5) * H + 2) * d]),
            __bfloat162float(tokens[((token * G + 1) * H + 2) * d]));
}

TEST_F(AttentionKernelsTest, CausalSoftmaxAndItsGradient) {
  // A chunk of 3 tokens starting at position 5 (keys 0..7), H = 3 rows per token, rows 16
  // elements apart.
  SoftmaxChunk chunk;
  chunk.kv_heads = 2;
  chunk.heads_per_kv = 3;
  chunk.rows = 9;
  chunk.diagonal = 5;
  chunk.keys = 8;
  chunk.row_stride = 16;
  chunk.lse_group_stride = 20;
  const int64_t cells = chunk.kv_heads * chunk.rows * chunk.row_stride;
  std::vector<float> scores(cells), d_probabilities(cells), row_sums(2 * 20);
  std::mt19937 random(11);
  std::uniform_real_distribution<float> uniform(-3, 3);
  for (float& s : scores) s = uniform(random);
  for (float& s : d_probabilities) s = uniform(random);
  for (float& s : row_sums) s = uniform(random);
  DeviceArray<float> d_scores(scores), d_lse(2 * 20), d_dp(d_probabilities), d_rows(row_sums);
  DeviceArray<bf16> d_p(cells), d_p_again(cells);
  ASSERT_EQ(CausalSoftmaxForward(d_scores.get(), d_p.get(), d_lse.get(), chunk, nullptr),
            cudaSuccess);
  ASSERT_EQ(CausalSoftmaxRecompute(d_scores.get(), d_lse.get(), d_p_again.get(), chunk, nullptr),
            cudaSuccess);
  const std::vector<bf16> p = d_p.ToHost();
  const std::vector<bf16> p_again = d_p_again.ToHost();
  const std::vector<float> lse = d_lse.ToHost();
  ASSERT_EQ(CausalSoftmaxBackward(d_dp.get(), d_rows.get(), d_p.get(), chunk, nullptr),
            cudaSuccess);
  const std::vector<bf16> ds = d_p.ToHost();
  // Every column of every row (the padding past `keys` is never written or read).
  std::vector<double> got_p, got_p_again, got_ds, expected_p, expected_ds, got_lse, expected_lse;
  for (int64_t g = 0; g < 2; ++g) {
    for (int64_t r = 0; r < chunk.rows; ++r) {
      const int64_t visible = chunk.diagonal + r / chunk.heads_per_kv + 1;
      const int64_t first = (g * chunk.rows + r) * chunk.row_stride;
      double most = -INFINITY, sum = 0;
      for (int64_t k = 0; k < visible; ++k) most = std::max<double>(most, scores[first + k]);
      for (int64_t k = 0; k < visible; ++k) sum += std::exp(scores[first + k] - most);
      expected_lse.push_back(most + std::log(sum));
      got_lse.push_back(lse[g * 20 + r]);
      for (int64_t k = 0; k < chunk.keys; ++k) {
        const double probability =
            k < visible ? std::exp(scores[first + k] - expected_lse.back()) : 0.0;
        expected_p.push_back(probability);
        expected_ds.push_back(probability * (d_probabilities[first + k] - row_sums[g * 20 + r]));
        got_p.push_back(__bfloat162float(p[first + k]));
        got_p_again.push_back(__bfloat162float(p_again[first + k]));
        got_ds.push_back(__bfloat162float(ds[first + k]));
      }
    }
  }
  EXPECT_LT(RelativeError(got_p, expected_p), kBf16Tolerance);
  EXPECT_LT(RelativeError(got_p_again, expected_p), kBf16Tolerance);
  EXPECT_LT(RelativeError(got_lse, expected_lse), kFloatTolerance);
  EXPECT_LT(RelativeError(got_ds, expected_ds), kBf16Tolerance);
}

TEST_F(AttentionKernelsTest, RowSumsLandInTheLseLayout) {
  const int64_t count = Tokens() * dims_.kv_heads * dims_.heads_per_kv * dims_.head_dim;
  const std::vector<bf16> d_out = RandomBf16(count, 12), out = RandomBf16(count, 13);
  DeviceArray<bf16> a(d_out), b(out);
  DeviceArray<float> sums(count / dims_.head_dim);
  ASSERT_EQ(AttentionRowSums(a.get(), b.get(), sums.get(), dims_, nullptr), cudaSuccess);
  const std::vector<double> A = ToDouble(d_out), B = ToDouble(out);
  const int64_t d = dims_.head_dim, H = dims_.heads_per_kv, G = dims_.kv_heads,
                n = dims_.tokens_per_sequence;
  std::vector<double> expected(count / d);
  for (int64_t t = 0; t < Tokens(); ++t) {
    for (int64_t g = 0; g < G; ++g) {
      for (int64_t h = 0; h < H; ++h) {
        double dot = 0;
        for (int64_t e = 0; e < d; ++e)
          dot += A[((t * G + g) * H + h) * d + e] * B[((t * G + g) * H + h) * d + e];
        expected[((t / n * G + g) * n + t % n) * H + h] = dot;
      }
    }
  }
  EXPECT_LT(RelativeError(ToDouble(sums.ToHost()), expected), kFloatTolerance);
}

// The context-parallel ring's merge over the second half of the rank's tokens: rows there
// become the log-sum-exp-weighted mean of both partial results and their lse the log of the
// summed exponentials; rows of the first half are left as they were.
TEST_F(AttentionKernelsTest, MergeAttentionPartialWeighsByLogSumExp) {
  const int64_t count = Tokens() * dims_.kv_heads * dims_.heads_per_kv * dims_.head_dim;
  const int64_t rows = count / dims_.head_dim;
  const std::vector<bf16> out = RandomBf16(count, 15), partial = RandomBf16(count, 16);
  std::vector<float> lse(rows), partial_lse(rows);
  std::mt19937 random(17);
  std::uniform_real_distribution<float> uniform(-4, 4);
  for (float& x : lse) x = uniform(random);
  for (float& x : partial_lse) x = uniform(random);
  DeviceArray<bf16> d_out(out), d_partial(partial);
  DeviceArray<float> d_lse(lse), d_partial_lse(partial_lse);
  const int64_t first = dims_.tokens_per_sequence / 2, tokens = dims_.tokens_per_sequence / 2;
  ASSERT_EQ(MergeAttentionPartial(d_partial.get(), d_partial_lse.get(), d_out.get(), d_lse.get(),
                                  dims_, first, tokens, nullptr),
            cudaSuccess);
  const std::vector<double> got_out = ToDouble(d_out.ToHost());
  const std::vector<double> got_lse = ToDouble(d_lse.ToHost());
  std::vector<double> expected_out = ToDouble(out), expected_lse(lse.begin(), lse.end());
  const std::vector<double> added = ToDouble(partial);
  const int64_t d = dims_.head_dim, per_sequence_group = dims_.tokens_per_sequence;
  for (int64_t r = 0; r < rows; ++r) {
    // lse layout [b, G, n, H]: token i = (r / H) % n.
    const int64_t i = (r / dims_.heads_per_kv) % per_sequence_group;
    if (i < first) continue;
    const double merged = std::log(std::exp(double{lse[r]}) + std::exp(double{partial_lse[r]}));
    const double kept_weight = std::exp(lse[r] - merged);
    const double added_weight = std::exp(partial_lse[r] - merged);
    for (int64_t e = 0; e < d; ++e) {
      expected_out[r * d + e] =
          kept_weight * expected_out[r * d + e] + added_weight * added[r * d + e];
    }
    expected_lse[r] = merged;
  }
  EXPECT_LT(RelativeError(got_out, expected_out), kBf16Tolerance);
  EXPECT_LT(RelativeError(got_lse, expected_lse), kFloatTolerance);
  for (int64_t r = 0; r < rows; ++r) {
    if ((r / dims_.heads_per_kv) % per_sequence_group >= first) continue;
    ASSERT_EQ(got_lse[r], lse[r]) << "row " << r << " of the first half changed";
  }

  // The ring's gradient accumulation.
  std::vector<float> sum(1000), part(1000);
  for (size_t e = 0; e < sum.size(); ++e) sum[e] = uniform(random), part[e] = uniform(random);
  DeviceArray<float> d_sum(sum), d_part(part);
  ASSERT_EQ(AccumulateFloats(d_part.get(), d_sum.get(), 1000, nullptr), cudaSuccess);
  const std::vector<float> accumulated = d_sum.ToHost();
  for (size_t e = 0; e < sum.size(); ++e) ASSERT_EQ(accumulated[e], sum[e] + part[e]) << e;
}

// The fused ring backward's per-step gradients: dQ (bf16, query layout) and dK, dV (bf16
// added into fp32, kv layout) are added at the product's local tokens of every sequence and
// kv head, and nowhere else (cuDNN writes only those tokens of its part).
TEST_F(AttentionKernelsTest, TokenAccumulationAddsOnlyTheProductsTokens) {
  const int64_t n = dims_.tokens_per_sequence, d = dims_.head_dim, H = dims_.heads_per_kv;
  const int64_t query_groups = dims_.sequences * dims_.kv_heads, kv_groups = 2 * query_groups;
  const int64_t first = 2, tokens = 5;
  const auto inside = [&](int64_t index, int64_t width) {
    const int64_t i = index / width % n;
    return i >= first && i < first + tokens;
  };

  const std::vector<bf16> query_part = RandomBf16(query_groups * n * H * d, 40);
  const std::vector<bf16> query_sum = RandomBf16(query_groups * n * H * d, 41);
  DeviceArray<bf16> d_query_part(query_part), d_query_sum(query_sum);
  ASSERT_EQ(
      AccumulateQueryTokens(d_query_part.get(), d_query_sum.get(), dims_, first, tokens, nullptr),
      cudaSuccess);
  const std::vector<bf16> query_got = d_query_sum.ToHost();
  for (size_t e = 0; e < query_got.size(); ++e) {
    const float expected = inside(e, H * d)
                               ? __bfloat162float(__float2bfloat16(__bfloat162float(query_sum[e]) +
                                                                   __bfloat162float(query_part[e])))
                               : __bfloat162float(query_sum[e]);
    ASSERT_EQ(__bfloat162float(query_got[e]), expected) << "query element " << e;
  }

  const std::vector<bf16> kv_part = RandomBf16(kv_groups * n * d, 42);
  const std::vector<double> start = ToDouble(RandomBf16(kv_groups * n * d, 43));
  const std::vector<float> kv_sum(start.begin(), start.end());
  DeviceArray<bf16> d_kv_part(kv_part);
  DeviceArray<float> d_kv_sum(kv_sum);
  ASSERT_EQ(
      AccumulateKeyValueTokens(d_kv_part.get(), d_kv_sum.get(), dims_, first, tokens, nullptr),
      cudaSuccess);
  const std::vector<float> kv_got = d_kv_sum.ToHost();
  for (size_t e = 0; e < kv_got.size(); ++e) {
    const float expected = inside(e, d) ? kv_sum[e] + __bfloat162float(kv_part[e]) : kv_sum[e];
    ASSERT_EQ(kv_got[e], expected) << "key/value element " << e;
  }
}

// all_gather's reorder (context rank r's local tokens are positions chunk r, then chunk
// 2c-1-r): every element of the rank-ordered gathered keys and values lands at its position,
// and position-ordered gradients add back at their rank's tokens, only below `keys`.
TEST_F(AttentionKernelsTest, GatheredKeyValuesMoveToPositionOrderAndBack) {
  const int64_t c = 2, n = dims_.tokens_per_sequence, s = c * n, chunk = n / 2, d = dims_.head_dim;
  const int64_t groups = 2 * dims_.sequences * dims_.kv_heads;  // keys, then values
  const int64_t block = groups * n * d;                         // one rank's kv layout
  // The rank-ordered index of element e of position p of kv group `group`.
  auto gathered_at = [&](int64_t group, int64_t p, int64_t e) {
    const int64_t j = p / chunk;
    const int64_t owner = j < c ? j : 2 * c - 1 - j;
    const int64_t local = (j < c ? 0 : chunk) + p % chunk;
    return owner * block + (group * n + local) * d + e;
  };
  const std::vector<bf16> gathered = RandomBf16(c * block, 30);
  DeviceArray<bf16> d_gathered(gathered), d_ordered(c * block);
  ASSERT_EQ(GatheredKeyValuesToPositions(d_gathered.get(), d_ordered.get(), dims_, c, nullptr),
            cudaSuccess);
  const std::vector<bf16> ordered = d_ordered.ToHost();
  for (int64_t group = 0; group < groups; ++group) {
    for (int64_t p = 0; p < s; ++p) {
      for (int64_t e = 0; e < d; ++e) {
        ASSERT_EQ(__bfloat162float(ordered[(group * s + p) * d + e]),
                  __bfloat162float(gathered[gathered_at(group, p, e)]))
            << group << " " << p << " " << e;
      }
    }
  }

  const int64_t keys = 3 * chunk;  // chunks 0, 1 (both ranks' first halves) and 2 (rank 1's)
  const std::vector<double> start = ToDouble(RandomBf16(c * block, 31));
  std::vector<float> sum(start.begin(), start.end());
  DeviceArray<float> d_sum(sum);
  ASSERT_EQ(AccumulatePositionsToGathered(d_ordered.get(), d_sum.get(), dims_, c, keys, nullptr),
            cudaSuccess);
  for (int64_t group = 0; group < groups; ++group) {
    for (int64_t p = 0; p < keys; ++p) {
      for (int64_t e = 0; e < d; ++e) {
        sum[gathered_at(group, p, e)] += __bfloat162float(ordered[(group * s + p) * d + e]);
      }
    }
  }
  const std::vector<float> accumulated = d_sum.ToHost();
  for (size_t e = 0; e < sum.size(); ++e) ASSERT_EQ(accumulated[e], sum[e]) << e;
}

TEST(LossKernelsTest, VocabularyShardedEmbeddingAndCrossEntropy) {
  const int64_t count = 6, hidden = 64;
  const VocabularyShard shard{100, 50};
  const std::vector<int32_t> tokens = {100, 149, 99, 150, 120, 100};
  const std::vector<bf16> table = RandomBf16(shard.size * hidden, 14);
  DeviceArray<int32_t> d_tokens(tokens);
  DeviceArray<bf16> d_table(table), d_out(count * hidden);
  ASSERT_EQ(
      EmbeddingForward(d_tokens.get(), d_table.get(), d_out.get(), count, hidden, shard, nullptr),
      cudaSuccess);
  DeviceArray<float> d_grad(std::vector<float>(shard.size * hidden, 0.0f));
  ASSERT_EQ(EmbeddingBackward(d_tokens.get(), d_out.get(), d_grad.get(), true, count, hidden, shard,
                              nullptr),
            cudaSuccess);
  const std::vector<double> T = ToDouble(table);
  std::vector<double> out(count * hidden, 0.0), grad(shard.size * hidden, 0.0);
  for (int64_t t = 0; t < count; ++t) {
    const int64_t row = tokens[t] - shard.start;
    if (row < 0 || row >= shard.size) continue;
    for (int64_t c = 0; c < hidden; ++c) {
      out[t * hidden + c] = T[row * hidden + c];
      grad[row * hidden + c] += T[row * hidden + c];
    }
  }
  EXPECT_EQ(RelativeError(ToDouble(d_out.ToHost()), out), 0);
  EXPECT_LT(RelativeError(ToDouble(d_grad.ToHost()), grad), kFloatTolerance);

  // Cross-entropy on this shard alone (as with one tensor-parallel rank).
  std::vector<float> logits(count * shard.size);
  std::mt19937 random(15);
  std::uniform_real_distribution<float> uniform(-4, 4);
  for (float& l : logits) l = uniform(random);
  const std::vector<int32_t> labels = {100, 101, 149, 120, 130, 140};
  DeviceArray<float> d_logits(logits), d_max(count), d_sum(count), d_loss(count);
  DeviceArray<int32_t> d_labels(labels);
  DeviceArray<bf16> d_dlogits(count * shard.size);
  ASSERT_EQ(LogitsRowMax(d_logits.get(), d_max.get(), count, shard, nullptr), cudaSuccess);
  ASSERT_EQ(LogitsRowSumExp(d_logits.get(), d_max.get(), d_sum.get(), count, shard, nullptr),
            cudaSuccess);
  ASSERT_EQ(CrossEntropyBackward(d_logits.get(), d_max.get(), d_sum.get(), d_labels.get(),
                                 d_dlogits.get(), d_loss.get(), 0.5f, count, shard, nullptr),
            cudaSuccess);
  std::vector<double> loss(count), dlogits(count * shard.size);
  for (int64_t t = 0; t < count; ++t) {
    const float* row = &logits[t * shard.size];
    double most = -INFINITY, sum = 0;
    for (int64_t v = 0; v < shard.size; ++v) most = std::max<double>(most, row[v]);
    for (int64_t v = 0; v < shard.size; ++v) sum += std::exp(row[v] - most);
    const int64_t label = labels[t] - shard.start;
    loss[t] = std::log(sum) + most - row[label];
    for (int64_t v = 0; v < shard.size; ++v) {
      dlogits[t * shard.size + v] = (std::exp(row[v] - most) / sum - (v == label)) * 0.5;
    }
  }
  EXPECT_LT(RelativeError(ToDouble(d_loss.ToHost()), loss), kFloatTolerance);
  EXPECT_LT(RelativeError(ToDouble(d_dlogits.ToHost()), dlogits), kBf16Tolerance);
}

TEST(OptimizerKernelsTest, AdamStepMatchesTheReference) {
  const int64_t count = 1000;
  std::mt19937 random(16);
  std::uniform_real_distribution<float> uniform(-1, 1);
  std::vector<float> gradient(count), master(count), m(count), v(count);
  for (int64_t i = 0; i < count; ++i) {
    gradient[i] = uniform(random);
    master[i] = uniform(random);
    m[i] = 0.1f * uniform(random);
    v[i] = 0.01f * std::abs(uniform(random));
  }
  DeviceArray<float> d_g(gradient), d_master(master), d_m(m), d_v(v);
  DeviceArray<bf16> d_w(count);
  AdamParameters p;
  p.step = 3;
  p.learning_rate = 1e-2f;
  ASSERT_EQ(
      AdamStep(d_g.get(), true, d_master.get(), d_m.get(), d_v.get(), d_w.get(), count, p, nullptr),
      cudaSuccess);
  std::vector<double> expected(count);
  for (int64_t i = 0; i < count; ++i) {
    const double mi = p.beta1 * m[i] + (1 - p.beta1) * gradient[i];
    const double vi = p.beta2 * v[i] + (1 - p.beta2) * gradient[i] * gradient[i];
    const double update = (mi / (1 - std::pow(p.beta1, 3))) /
                              (std::sqrt(vi / (1 - std::pow(p.beta2, 3))) + p.epsilon) +
                          p.weight_decay * master[i];
    expected[i] = master[i] - p.learning_rate * update;
  }
  EXPECT_LT(RelativeError(ToDouble(d_master.ToHost()), expected), kFloatTolerance);
  EXPECT_LT(RelativeError(ToDouble(d_w.ToHost()), expected), kBf16Tolerance);
}

// The values themselves are checked on the CPU (fill_values_test).
TEST(FillKernelsTest, WriteTheCpusValues) {
  const int64_t count = 100000;
  DeviceArray<bf16> a(count);
  DeviceArray<int32_t> tokens(count);
  ASSERT_EQ(FillUniformBf16(a.get(), count, 17, 0.02f, nullptr), cudaSuccess);
  ASSERT_EQ(FillTokens(tokens.get(), count, 17, 1000, nullptr), cudaSuccess);
  const std::vector<bf16> values = a.ToHost();
  const std::vector<int32_t> token_values = tokens.ToHost();
  int64_t differ = 0;
  for (int64_t i = 0; i < count; ++i) {
    const bf16 expected = __float2bfloat16(FillUniformValue(17, i, 0.02f));
    differ += std::memcmp(&values[i], &expected, sizeof(bf16)) != 0;
    differ += token_values[i] != FillTokenValue(17, i, 1000);
  }
  EXPECT_EQ(differ, 0);
}

}  // namespace
}  // namespace paratune
