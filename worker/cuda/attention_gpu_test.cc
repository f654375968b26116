// Attention::Forward and Backward (one context rank) against a float64 causal GQA attention
// with rotary embeddings computed on the CPU: the chunked passes with query chunks smaller
// than the sequence, so that every chunk sees a different number of keys, and cuDNN's fused
// passes, each backward from either forward's log-sum-exp; then cuDNN's fused backward
// against the chunked one, gradient by gradient, at a larger GQA shape; then the
// context-parallel ring (cp_comm_type p2p) of every rank of 2, 3 and 4, run one rank at a
// time on one GPU with the other ranks simulated, against the same reference, chunked and
// with cuDNN's fused products (then also against the chunked ring); then all_gather's ranks
// of 2 and 4 the same way, chunked and with cuDNN's plan per query half.
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
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

// Device buffers of one micro-batch's attention of `shapes` (layouts of
// attention_kernels.h), scores and probabilities sized for whole-sequence chunks or the
// probe's attention workspace, whichever is larger; with context parallelism, the ring's
// received blocks and gradient slots.
struct Buffers {
  explicit Buffers(const ShardShapes& shapes, CpCommType exchange = CpCommType::kP2p)
      : rows(shapes.micro_batch * shapes.sequence_per_rank),
        width(shapes.kv_heads * (shapes.QueryHeadsPerKvHead() + 2) * shapes.head_dim),
        query_values(rows * shapes.query_heads * shapes.head_dim),
        kv_values(rows * shapes.kv_heads * shapes.head_dim),
        score_values(shapes.sequence_per_rank * shapes.sequence_per_rank * shapes.query_heads),
        workspace_bytes(std::max<int64_t>(score_values * sizeof(float),
                                          AttentionScoresBytes(shapes, exchange))),
        out(query_values),
        d_qkv(rows * width),
        query(query_values),
        key_value(2 * kv_values),
        heads(query_values),
        query_gradient(query_values),
        probabilities(score_values),
        lse(query_values / shapes.head_dim),
        scores(workspace_bytes / sizeof(float)),
        kv_gradients(2 * kv_values * Blocks(shapes, exchange, kRingGradientSlots)),
        row_sums(query_values / shapes.head_dim),
        gathered(2 * kv_values *
                 Blocks(shapes, exchange, RingKeyValueSlots(shapes.context_parallel))) {
    buffers.query = query.get();
    buffers.key_value = key_value.get();
    buffers.lse = lse.get();
    buffers.heads = heads.get();
    buffers.query_gradient = query_gradient.get();
    buffers.scores = scores.get();
    buffers.probabilities = probabilities.get();
    buffers.key_value_gradients = kv_gradients.get();
    buffers.row_sums = row_sums.get();
    buffers.gathered_key_value = gathered.get();
  }

  // Kv-layout blocks of the gathered keys and of their gradients: c with all_gather, the
  // ring's slots with p2p, one without context parallelism.
  static int64_t Blocks(const ShardShapes& shapes, CpCommType exchange, int64_t ring_slots) {
    if (shapes.context_parallel == 1) return 1;
    return exchange == CpCommType::kP2p ? ring_slots : shapes.context_parallel;
  }

  int64_t rows, width, query_values, kv_values, score_values, workspace_bytes;
  DeviceArray<bf16> out, d_qkv, query, key_value, heads, query_gradient, probabilities;
  DeviceArray<float> lse, scores, kv_gradients, row_sums;
  DeviceArray<bf16> gathered;  // the ring's received blocks or all_gather's (c > 1)
  AttentionBuffers buffers;
};

// The kernels of one run: the chunk size of the chunked passes, and which passes are fused.
struct Kernel {
  int64_t query_chunk;
  bool fused_forward;
  bool fused_backward;
};

class AttentionTest : public ::testing::TestWithParam<Kernel> {};

TEST_P(AttentionTest, ForwardAndBackwardMatchTheReference) {
  void* workspace = nullptr;
  ASSERT_EQ(cudaMalloc(&workspace, kGemmWorkspaceBytes), cudaSuccess);
  absl::StatusOr<std::unique_ptr<Gemm>> gemm = Gemm::Create(workspace, kGemmWorkspaceBytes);
  ASSERT_TRUE(gemm.ok()) << gemm.status();
  PhaseTimer timer(nullptr);
  Buffers b(Shapes());
  // `chunked` never selects cuDNN; `fused` runs whichever pass the parameter says.
  Attention chunked(gemm->get(), Shapes(), GetParam().query_chunk, nullptr, 0, CpCommType::kP2p,
                    nullptr, &timer);
  Attention fused(gemm->get(), Shapes(), GetParam().query_chunk, nullptr, 0, CpCommType::kP2p,
                  nullptr, &timer);
  if (GetParam().fused_forward || GetParam().fused_backward) {
    ASSERT_TRUE(fused.SelectKernel(b.workspace_bytes).ok());
    ASSERT_STREQ(fused.forward_kernel(), "cudnn_fused") << fused.fallback_reason();
    ASSERT_STREQ(fused.backward_kernel(), "cudnn_fused") << fused.backward_fallback_reason();
  }
  Attention& forward = GetParam().fused_forward ? fused : chunked;
  Attention& backward = GetParam().fused_backward ? fused : chunked;

  const std::vector<bf16> qkv = RandomBf16(kRows * kWidth, 1);
  const std::vector<bf16> d_out = RandomBf16(kQueryValues, 2);
  DeviceArray<bf16> d_qkv_in(qkv), d_dout(d_out);
  ASSERT_TRUE(forward.Forward(d_qkv_in.get(), b.out.get(), b.buffers).ok());
  ASSERT_TRUE(backward.Backward(d_dout.get(), b.out.get(), b.d_qkv.get(), b.buffers).ok());

  const Reference reference = Compute(ToDouble(qkv), ToDouble(d_out));
  EXPECT_LT(RelativeError(ToDouble(b.out.ToHost()), reference.out), 1e-2);
  EXPECT_LT(RelativeError(ToDouble(b.d_qkv.ToHost()), reference.d_qkv), 3e-2);
  gemm->reset();
  cudaFree(workspace);
}

// One chunk per sequence, chunks of 16 tokens, a chunk size that does not divide it; cuDNN's
// forward with the chunked backward, the chunked forward with cuDNN's backward, and both.
INSTANTIATE_TEST_SUITE_P(Kernels, AttentionTest,
                         ::testing::Values(Kernel{48, false, false}, Kernel{16, false, false},
                                           Kernel{20, false, false}, Kernel{16, true, false},
                                           Kernel{16, false, true}, Kernel{16, true, true}));

// The query, key and value parts of a qkv-layout gradient [T, G, H + 2, d].
std::vector<double> Part(const std::vector<double>& d_qkv, const ShardShapes& x, int64_t first,
                         int64_t heads) {
  const int64_t H = x.QueryHeadsPerKvHead(), d = x.head_dim;
  const int64_t groups = static_cast<int64_t>(d_qkv.size()) / ((H + 2) * d);
  std::vector<double> part;
  for (int64_t group = 0; group < groups; ++group) {
    for (int64_t e = first * d; e < (first + heads) * d; ++e) {
      part.push_back(d_qkv[group * (H + 2) * d + e]);
    }
  }
  return part;
}

// dQ, dK and dV of `actual` each within `tolerance` (relative error) of `expected`'s, the
// failure naming which and `what`.
void ExpectQkvGradientsNear(const std::vector<double>& actual, const std::vector<double>& expected,
                            const ShardShapes& x, double tolerance, const std::string& what) {
  const int64_t H = x.QueryHeadsPerKvHead();
  for (const auto& [name, first, heads] :
       {std::tuple{"dQ", int64_t{0}, H}, std::tuple{"dK", H, int64_t{1}},
        std::tuple{"dV", H + 1, int64_t{1}}}) {
    EXPECT_LT(RelativeError(Part(actual, x, first, heads), Part(expected, x, first, heads)),
              tolerance)
        << name << " " << what;
  }
}

// cuDNN's fused backward against the chunked backward from the same fused forward, at a
// causal GQA shape like a Llama rank's (2 sequences of 512 tokens, 2 kv heads of 4 query
// heads, d 128): dQ, dK and dV each within bf16 rounding of the chunked path's.
TEST(AttentionKernelTest, FusedBackwardMatchesTheChunkedBackward) {
  ShardShapes x = Shapes();
  x.sequence = x.sequence_per_rank = 512;
  x.tokens = 2 * 512;
  x.query_heads = 8;
  x.head_dim = 128;
  void* workspace = nullptr;
  ASSERT_EQ(cudaMalloc(&workspace, kGemmWorkspaceBytes), cudaSuccess);
  absl::StatusOr<std::unique_ptr<Gemm>> gemm = Gemm::Create(workspace, kGemmWorkspaceBytes);
  ASSERT_TRUE(gemm.ok()) << gemm.status();
  PhaseTimer timer(nullptr);
  Buffers b(x);
  Attention fused(gemm->get(), x, 128, nullptr, 0, CpCommType::kP2p, nullptr, &timer);
  Attention chunked(gemm->get(), x, 128, nullptr, 0, CpCommType::kP2p, nullptr, &timer);
  ASSERT_TRUE(fused.SelectKernel(b.workspace_bytes).ok());
  ASSERT_STREQ(fused.forward_kernel(), "cudnn_fused") << fused.fallback_reason();
  ASSERT_STREQ(fused.backward_kernel(), "cudnn_fused") << fused.backward_fallback_reason();

  const DeviceArray<bf16> qkv(RandomBf16(b.rows * b.width, 3));
  const DeviceArray<bf16> d_out(RandomBf16(b.query_values, 4));
  ASSERT_TRUE(fused.Forward(qkv.get(), b.out.get(), b.buffers).ok());
  ASSERT_TRUE(chunked.Backward(d_out.get(), b.out.get(), b.d_qkv.get(), b.buffers).ok());
  const std::vector<double> expected = ToDouble(b.d_qkv.ToHost());
  ASSERT_TRUE(fused.Backward(d_out.get(), b.out.get(), b.d_qkv.get(), b.buffers).ok());
  ExpectQkvGradientsNear(ToDouble(b.d_qkv.ToHost()), expected, x, 2e-2,
                         "of the fused backward against the chunked one");
  gemm->reset();
  cudaFree(workspace);
}

// cuDNN builds its fused forward and backward for the attention of Llama-3.1-8B (s 8192, 32
// query and 8 kv heads of 128) and of Llama-3.1-70B at tensor parallelism 8 (8 query heads,
// 1 kv head), within the workspace the probe's footprint plan gives them; at context
// parallelism 2 the p2p ring's products and all_gather's query halves on either rank (each
// rank has its own kinds of step, and its own halves' keys).
TEST(AttentionKernelTest, CudnnRunsLlamaShapesTheRingAndAllGather) {
  PhaseTimer timer(nullptr);
  ShardShapes llama = Shapes();
  llama.micro_batch = 1;
  llama.sequence = llama.sequence_per_rank = 8192;
  llama.head_dim = 128;
  for (const auto& [query_heads, kv_heads] : {std::pair{32, 8}, std::pair{8, 1}}) {
    llama.query_heads = query_heads;
    llama.kv_heads = kv_heads;
    Attention attention(nullptr, llama, 1, nullptr, 0, CpCommType::kP2p, nullptr, &timer);
    ASSERT_TRUE(attention.SelectKernel(AttentionScoresBytes(llama, CpCommType::kP2p)).ok());
    EXPECT_STREQ(attention.forward_kernel(), "cudnn_fused") << attention.fallback_reason();
    EXPECT_STREQ(attention.backward_kernel(), "cudnn_fused")
        << attention.backward_fallback_reason();
  }
  llama.context_parallel = 2;
  llama.sequence_per_rank = 4096;
  for (const CpCommType exchange : {CpCommType::kP2p, CpCommType::kAllGather}) {
    for (int64_t rank : {0, 1}) {
      Attention attention(nullptr, llama, 1, nullptr, rank, exchange, nullptr, &timer);
      ASSERT_TRUE(attention.SelectKernel(AttentionScoresBytes(llama, exchange)).ok());
      EXPECT_STREQ(attention.forward_kernel(), "cudnn_fused") << attention.fallback_reason();
      EXPECT_STREQ(attention.backward_kernel(), "cudnn_fused")
          << attention.backward_fallback_reason();
    }
  }
}

// Stands in for the other ranks of context rank `rank`'s ring on one GPU (NCCL refuses two
// ranks of a communicator on one device): the keys and values it receives are every rank's
// (`blocks`, from RopeSplit), the gradients it receives are `served` (per block), and the
// gradients it sends land in `sent` (per block). Copies are enqueued on the ring's stream,
// so they are ordered as NCCL's transfers would be.
class SimulatedRing : public RingTransport {
 public:
  SimulatedRing(int64_t c, int64_t rank, std::vector<const bf16*> blocks,
                std::vector<const float*> served, std::vector<float*> sent)
      : c_(c),
        rank_(rank),
        blocks_(std::move(blocks)),
        served_(std::move(served)),
        sent_(std::move(sent)) {}

  absl::Status Exchange(const RingExchange& exchange, cudaStream_t stream) override {
    if (exchange.receive_key_values != nullptr) {
      // Every pass receives blocks for steps 1 .. c - 1, in order.
      const int64_t step = 1 + key_value_exchanges_++ % (c_ - 1);
      PT_RETURN_IF_ERROR(Copy(exchange.receive_key_values, blocks_[Source(step)],
                              exchange.key_value_bytes, stream));
    }
    if (exchange.send_gradients != nullptr) {
      // The backward's gradient exchanges follow steps 0 .. c - 1: each sends the step's
      // block's gradients and receives the next step's block's.
      const int64_t step = gradient_exchanges_++ % c_;
      PT_RETURN_IF_ERROR(
          Copy(sent_[Source(step)], exchange.send_gradients, exchange.gradient_bytes, stream));
      PT_RETURN_IF_ERROR(Copy(exchange.receive_gradients, served_[Source(step + 1)],
                              exchange.gradient_bytes, stream));
    }
    return absl::OkStatus();
  }

 private:
  int64_t Source(int64_t step) const { return ((rank_ - step) % c_ + c_) % c_; }
  static absl::Status Copy(void* to, const void* from, int64_t bytes, cudaStream_t stream) {
    if (cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice, stream) != cudaSuccess) {
      return absl::InternalError("cudaMemcpyAsync in the simulated ring");
    }
    return absl::OkStatus();
  }

  int64_t c_, rank_;
  std::vector<const bf16*> blocks_;
  std::vector<const float*> served_;
  std::vector<float*> sent_;
  int64_t key_value_exchanges_ = 0;
  int64_t gradient_exchanges_ = 0;
};

// Row of local token t of context rank `rank` of c (sequence `seq`) in the whole sequence's
// tokens.
int64_t WholeRow(int64_t c, int64_t rank, int64_t seq, int64_t t) {
  const int64_t half = kTokens / c / 2;
  return seq * kTokens + (t < half ? rank * half + t : (2 * c - 1 - rank) * half + t - half);
}

// A context rank's rows of a [kRows, width] tokens-layout tensor.
template <typename T>
std::vector<T> RowsOfRank(const std::vector<T>& all, int64_t c, int64_t rank, int64_t width) {
  std::vector<T> part;
  for (int64_t seq = 0; seq < kSequences; ++seq) {
    for (int64_t t = 0; t < kTokens / c; ++t) {
      const auto first = all.begin() + WholeRow(c, rank, seq, t) * width;
      part.insert(part.end(), first, first + width);
    }
  }
  return part;
}

constexpr int64_t kQueryWidth = kKvHeads * kHeadsPerKv * kHeadDim;

// Every context rank's qkv and output gradient rows, and its keys and values as RopeSplit
// writes them (kv layout), for the simulated context group of `x`.
struct RankInputs {
  RankInputs(const std::vector<bf16>& qkv, const std::vector<bf16>& d_out, const ShardShapes& x,
             Buffers* b) {
    const int64_t c = x.context_parallel;
    for (int64_t rank = 0; rank < c; ++rank) {
      qkv_of.push_back(std::make_unique<DeviceArray<bf16>>(RowsOfRank(qkv, c, rank, kWidth)));
      d_out_of.push_back(
          std::make_unique<DeviceArray<bf16>>(RowsOfRank(d_out, c, rank, kQueryWidth)));
      blocks.push_back(std::make_unique<DeviceArray<bf16>>(2 * b->kv_values));
      TokenPositions positions{kTokens, c, rank};
      AttentionDims dims{kSequences, x.sequence_per_rank, kKvHeads, kHeadsPerKv, kHeadDim};
      EXPECT_EQ(RopeSplit(qkv_of[rank]->get(), b->query.get(), blocks[rank]->get(), dims, positions,
                          nullptr),
                cudaSuccess);
      block_pointers.push_back(blocks[rank]->get());
    }
  }

  std::vector<std::unique_ptr<DeviceArray<bf16>>> qkv_of, d_out_of, blocks;
  std::vector<const bf16*> block_pointers;
};

struct RingCase {
  int64_t context_parallel;
  int64_t query_chunk;
  bool fused;  // cuDNN's plans for every product of both passes
};

class AttentionRingTest : public ::testing::TestWithParam<RingCase> {};

// Every rank of the ring, one at a time, against the float64 reference of the whole
// sequence: the output of the rank's tokens, and their query, key and value gradients. Run
// twice: first with zero gradients served, which captures each rank's part of every block's
// key and value gradients (what it sends is what it added); then serving each block's
// gradients as the ranks before it in the ring summed them, so the rank's own come back
// whole after the last step, as the other ranks would send them. A fused ring is also
// compared with the chunked ring of the same rank, served the same gradients.
TEST_P(AttentionRingTest, EveryRankMatchesTheReference) {
  const int64_t c = GetParam().context_parallel;
  const int64_t n = kTokens / c;
  ShardShapes x = Shapes();
  x.context_parallel = c;
  x.sequence_per_rank = n;
  x.tokens = kSequences * n;
  void* workspace = nullptr;
  ASSERT_EQ(cudaMalloc(&workspace, kGemmWorkspaceBytes), cudaSuccess);
  absl::StatusOr<std::unique_ptr<Gemm>> gemm = Gemm::Create(workspace, kGemmWorkspaceBytes);
  ASSERT_TRUE(gemm.ok()) << gemm.status();
  PhaseTimer timer(nullptr);

  const std::vector<bf16> qkv = RandomBf16(kRows * kWidth, 5);
  const std::vector<bf16> d_out = RandomBf16(kQueryValues, 6);
  const Reference reference = Compute(ToDouble(qkv), ToDouble(d_out));
  auto rows_of = [&](const auto& all, int64_t rank, int64_t width) {
    return RowsOfRank(all, c, rank, width);
  };

  const int64_t query_width = kQueryWidth;
  Buffers b(x);
  const int64_t block_values = 2 * b.kv_values;
  const RankInputs inputs(qkv, d_out, x, &b);
  ASSERT_FALSE(HasFatalFailure());
  const auto& qkv_of = inputs.qkv_of;
  const auto& d_out_of = inputs.d_out_of;
  const std::vector<const bf16*>& block_pointers = inputs.block_pointers;

  // parts[rank][block]: the rank's part of the block's key and value gradients.
  std::vector<std::vector<std::vector<float>>> parts(c);
  for (int pass = 0; pass < 2; ++pass) {
    for (int64_t rank = 0; rank < c; ++rank) {
      std::vector<std::unique_ptr<DeviceArray<float>>> served, sent;
      std::vector<const float*> served_pointers;
      std::vector<float*> sent_pointers;
      for (int64_t block = 0; block < c; ++block) {
        // The gradients rank `rank` receives with `block`: the parts of the ranks that held
        // it before (block, block + 1, ..., rank - 1), all of them for its own block.
        // Block j is held at step k by rank j + k.
        std::vector<float> sum(block_values, 0.0f);
        const int64_t holders = block == rank ? c : (rank - block + c) % c;
        for (int64_t k = 0; pass == 1 && k < holders; ++k) {
          const std::vector<float>& part = parts[(block + k) % c][block];
          for (int64_t e = 0; e < block_values; ++e) sum[e] += part[e];
        }
        served.push_back(std::make_unique<DeviceArray<float>>(sum));
        sent.push_back(std::make_unique<DeviceArray<float>>(block_values));
        served_pointers.push_back(served.back()->get());
        sent_pointers.push_back(sent.back()->get());
      }
      // The rank's forward and backward, fused or chunked: its output and d_qkv.
      auto run = [&](bool fused, std::vector<double>* out, std::vector<double>* d_qkv) {
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // the ring's stream does not wait
        Attention attention(gemm->get(), x, GetParam().query_chunk, nullptr, rank, CpCommType::kP2p,
                            nullptr, &timer);
        if (fused) {
          ASSERT_TRUE(attention.SelectKernel(b.workspace_bytes).ok());
          ASSERT_STREQ(attention.forward_kernel(), "cudnn_fused") << attention.fallback_reason();
          ASSERT_STREQ(attention.backward_kernel(), "cudnn_fused")
              << attention.backward_fallback_reason();
        }
        attention.SetRingTransport(std::make_unique<SimulatedRing>(c, rank, block_pointers,
                                                                   served_pointers, sent_pointers));
        ASSERT_TRUE(attention.Forward(qkv_of[rank]->get(), b.out.get(), b.buffers).ok());
        ASSERT_TRUE(
            attention.Backward(d_out_of[rank]->get(), b.out.get(), b.d_qkv.get(), b.buffers).ok());
        *out = ToDouble(b.out.ToHost());
        *d_qkv = ToDouble(b.d_qkv.ToHost());
      };
      std::vector<double> out, d_qkv;
      run(GetParam().fused, &out, &d_qkv);
      if (HasFatalFailure()) return;
      if (pass == 0) {
        for (int64_t block = 0; block < c; ++block) parts[rank].push_back(sent[block]->ToHost());
        continue;
      }
      EXPECT_LT(RelativeError(out, rows_of(reference.out, rank, query_width)), 1e-2)
          << "rank " << rank;
      std::vector<std::pair<const char*, std::vector<double>>> references = {
          {"the reference", rows_of(reference.d_qkv, rank, kWidth)}};
      if (GetParam().fused) {
        std::vector<double> chunked_out, chunked_d_qkv;
        run(false, &chunked_out, &chunked_d_qkv);
        if (HasFatalFailure()) return;
        EXPECT_LT(RelativeError(out, chunked_out), 1e-2) << "rank " << rank;
        references.push_back({"the chunked ring", chunked_d_qkv});
      }
      for (const auto& [against, expected] : references) {
        ExpectQkvGradientsNear(d_qkv, expected, x, 3e-2,
                               absl::StrCat("of rank ", rank, " against ", against));
      }
    }
  }
  gemm->reset();
  cudaFree(workspace);
}

// Two ranks (one received block), three (both kinds of step beside the diagonal, two slots),
// four; query chunks that do and do not divide a rank's halves; cuDNN's products at each
// ring size (its second-half products start 6 to 12 tokens into the layouts).
INSTANTIATE_TEST_SUITE_P(Ranks, AttentionRingTest,
                         ::testing::Values(RingCase{2, 5, false}, RingCase{3, 4, false},
                                           RingCase{4, 3, false}, RingCase{4, 6, false},
                                           RingCase{2, 5, true}, RingCase{3, 4, true},
                                           RingCase{4, 3, true}));

// Stands in for the other context ranks of all_gather on one GPU (NCCL refuses two ranks of a
// communicator on one device): the gather returns every rank's keys and values (`blocks`,
// from RopeSplit), the reduce-scatter keeps what the rank sends ([c, kv layout]) in `sent`
// and returns `served` as the rank's own gradients, as the other ranks' sums would. Copies
// are enqueued on the compute stream, as NCCL's collectives are.
class SimulatedGather : public GatherTransport {
 public:
  SimulatedGather(std::vector<const bf16*> blocks, const float* served, float* sent)
      : blocks_(std::move(blocks)), served_(served), sent_(sent) {}

  absl::Status AllGather(const bf16* send, bf16* receive, int64_t count,
                         cudaStream_t stream) override {
    for (size_t rank = 0; rank < blocks_.size(); ++rank) {
      PT_RETURN_IF_ERROR(Copy(receive + rank * count, blocks_[rank], count * sizeof(bf16), stream));
    }
    return absl::OkStatus();
  }
  absl::Status ReduceScatter(const float* send, float* receive, int64_t count,
                             cudaStream_t stream) override {
    PT_RETURN_IF_ERROR(Copy(sent_, send, blocks_.size() * count * sizeof(float), stream));
    return Copy(receive, served_, count * sizeof(float), stream);
  }

 private:
  static absl::Status Copy(void* to, const void* from, int64_t bytes, cudaStream_t stream) {
    if (cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice, stream) != cudaSuccess) {
      return absl::InternalError("cudaMemcpyAsync in the simulated gather");
    }
    return absl::OkStatus();
  }

  std::vector<const bf16*> blocks_;
  const float* served_;
  float* sent_;
};

class AttentionAllGatherTest : public ::testing::TestWithParam<RingCase> {};

// Every rank of all_gather, one at a time, against the float64 reference of the whole
// sequence, as the ring's test: first with zero gradients served, which captures each rank's
// fp32 key and value gradients of every rank's block (what it reduce-scatters); then serving
// each rank the sum of every rank's gradients of its block. A fused rank (cuDNN's plan per
// query half) is also compared with the chunked all_gather of the same rank.
TEST_P(AttentionAllGatherTest, EveryRankMatchesTheReference) {
  const int64_t c = GetParam().context_parallel;
  ShardShapes x = Shapes();
  x.context_parallel = c;
  x.sequence_per_rank = kTokens / c;
  x.tokens = kSequences * x.sequence_per_rank;
  void* workspace = nullptr;
  ASSERT_EQ(cudaMalloc(&workspace, kGemmWorkspaceBytes), cudaSuccess);
  absl::StatusOr<std::unique_ptr<Gemm>> gemm = Gemm::Create(workspace, kGemmWorkspaceBytes);
  ASSERT_TRUE(gemm.ok()) << gemm.status();
  PhaseTimer timer(nullptr);

  const std::vector<bf16> qkv = RandomBf16(kRows * kWidth, 7);
  const std::vector<bf16> d_out = RandomBf16(kQueryValues, 8);
  const Reference reference = Compute(ToDouble(qkv), ToDouble(d_out));
  Buffers b(x, CpCommType::kAllGather);
  const int64_t block_values = 2 * b.kv_values;
  const RankInputs inputs(qkv, d_out, x, &b);
  ASSERT_FALSE(HasFatalFailure());

  // sent[rank]: the rank's fp32 gradients of every rank's block, [c, kv layout].
  std::vector<std::vector<float>> sent(c);
  for (int pass = 0; pass < 2; ++pass) {
    for (int64_t rank = 0; rank < c; ++rank) {
      std::vector<float> sum(block_values, 0.0f);
      for (int64_t other = 0; pass == 1 && other < c; ++other) {
        for (int64_t e = 0; e < block_values; ++e) sum[e] += sent[other][rank * block_values + e];
      }
      const DeviceArray<float> served(sum);
      DeviceArray<float> sent_here(c * block_values);
      auto run = [&](bool fused, std::vector<double>* out, std::vector<double>* d_qkv) {
        Attention attention(gemm->get(), x, GetParam().query_chunk, nullptr, rank,
                            CpCommType::kAllGather, nullptr, &timer);
        if (fused) {
          ASSERT_TRUE(attention.SelectKernel(b.workspace_bytes).ok());
          ASSERT_STREQ(attention.forward_kernel(), "cudnn_fused") << attention.fallback_reason();
          ASSERT_STREQ(attention.backward_kernel(), "cudnn_fused")
              << attention.backward_fallback_reason();
        }
        attention.SetGatherTransport(std::make_unique<SimulatedGather>(
            inputs.block_pointers, served.get(), sent_here.get()));
        ASSERT_TRUE(attention.Forward(inputs.qkv_of[rank]->get(), b.out.get(), b.buffers).ok());
        ASSERT_TRUE(
            attention.Backward(inputs.d_out_of[rank]->get(), b.out.get(), b.d_qkv.get(), b.buffers)
                .ok());
        *out = ToDouble(b.out.ToHost());
        *d_qkv = ToDouble(b.d_qkv.ToHost());
      };
      std::vector<double> out, d_qkv;
      run(GetParam().fused, &out, &d_qkv);
      if (HasFatalFailure()) return;
      if (pass == 0) {
        sent[rank] = sent_here.ToHost();
        continue;
      }
      EXPECT_LT(RelativeError(out, RowsOfRank(reference.out, c, rank, kQueryWidth)), 1e-2)
          << "rank " << rank;
      std::vector<std::pair<const char*, std::vector<double>>> references = {
          {"the reference", RowsOfRank(reference.d_qkv, c, rank, kWidth)}};
      if (GetParam().fused) {
        std::vector<double> chunked_out, chunked_d_qkv;
        run(false, &chunked_out, &chunked_d_qkv);
        if (HasFatalFailure()) return;
        EXPECT_LT(RelativeError(out, chunked_out), 1e-2) << "rank " << rank;
        references.push_back({"the chunked all_gather", chunked_d_qkv});
      }
      for (const auto& [against, expected] : references) {
        ExpectQkvGradientsNear(d_qkv, expected, x, 3e-2,
                               absl::StrCat("of rank ", rank, " against ", against));
      }
    }
  }
  gemm->reset();
  cudaFree(workspace);
}

// Two and four ranks, chunked with query chunks that do and do not divide a rank's halves,
// and fused (cuDNN's second-half products start 6 and 12 tokens into the layouts).
INSTANTIATE_TEST_SUITE_P(Ranks, AttentionAllGatherTest,
                         ::testing::Values(RingCase{2, 5, false}, RingCase{4, 3, false},
                                           RingCase{2, 5, true}, RingCase{4, 3, true}));

}  // namespace
}  // namespace paratune
