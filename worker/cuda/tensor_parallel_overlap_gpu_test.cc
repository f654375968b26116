// TensorParallelOverlap on one GPU, one rank of a tensor group of 2 to 4 at a time: NCCL
// refuses two ranks of one communicator on one GPU, so a simulated transport serves the other
// ranks. Its ring exchange hands over the chunk the previous rank sends at that step
// (RingExchangeOrder of that rank, whose pairing tensor_parallel_overlap_plan_test checks), its
// all-gather every rank's rows, and its reduce-scatter the rank's rows of its own partial sums
// (the other ranks contributing zeros). The overlapped products are checked against float64
// products of the whole gathered operands, as the exposed path computes them: output rows and
// columns in their places, the gathered buffer whole, the weight gradient over every rank's
// rows; and the NCCL transport over a one-rank group. The fp8 cases (compute capability 9.0)
// run the same overlaps on fp8 operands, checked against float64 products of the dequantized
// bytes. What needs several GPUs: NCCL's send/receive
// pairing across processes, the sums over ranks, and how much communication the overlap hides.
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "worker/cuda/fp8_test_util.h"
#include "worker/cuda/gemm.h"
#include "worker/cuda/gpu_test_util.h"
#include "worker/cuda/phase_timer.h"
#include "worker/cuda/tensor_parallel_overlap.h"
#include "worker/probe/footprint_plan.h"
#include "worker/probe/fp8_scaling.h"
#include "worker/probe/tensor_parallel_overlap_plan.h"

namespace paratune {
namespace {

using bf16 = __nv_bfloat16;

// Rank `rank` of `size`, the others simulated from `all_rows` (every rank's rows of the
// gathered operand, rank-ordered, device memory: bf16 or fp8 bytes).
class SimulatedTransport : public TensorParallelTransport {
 public:
  SimulatedTransport(int64_t size, int64_t rank, const void* all_rows)
      : size_(size), rank_(rank), all_rows_(all_rows) {}

  int64_t size() const override { return size_; }
  int64_t rank() const override { return rank_; }

  absl::Status Exchange(const void* send, void* receive, int64_t bytes,
                        cudaStream_t stream) override {
    const int64_t previous = (rank_ + size_ - 1) % size_;
    // Each ring has size - 1 exchanges; the previous rank sends what it multiplied.
    const int64_t step = exchanges_++ % (size_ - 1);
    const int64_t chunk = RingExchangeOrder(size_, previous)[step].send_chunk;
    sent_.push_back(send);
    return Copy(receive, reinterpret_cast<const char*>(all_rows_) + chunk * bytes, bytes, stream);
  }
  absl::Status AllGather(const void* send, void* receive, int64_t bytes,
                         cudaStream_t stream) override {
    for (int64_t j = 0; j < size_; ++j) {
      const void* from = j == rank_ ? send : static_cast<const char*>(all_rows_) + j * bytes;
      absl::Status status = Copy(static_cast<char*>(receive) + j * bytes, from, bytes, stream);
      if (!status.ok()) return status;
    }
    return absl::OkStatus();
  }
  absl::Status ReduceScatter(const bf16* send, bf16* receive, int64_t count,
                             cudaStream_t stream) override {
    return Copy(receive, send + rank_ * count, count * sizeof(bf16), stream);
  }

  // The send buffers of the exchanges so far.
  const std::vector<const void*>& sent() const { return sent_; }

 private:
  static absl::Status Copy(void* to, const void* from, int64_t bytes, cudaStream_t stream) {
    if (cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice, stream) != cudaSuccess) {
      return absl::InternalError("cudaMemcpyAsync");
    }
    return absl::OkStatus();
  }

  int64_t size_;
  int64_t rank_;
  const void* all_rows_;
  int64_t exchanges_ = 0;
  std::vector<const void*> sent_;
};

class TensorParallelOverlapTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(cudaMalloc(&workspace_, kGemmWorkspaceBytes), cudaSuccess);
    absl::StatusOr<std::unique_ptr<Gemm>> gemm = Gemm::Create(workspace_, kGemmWorkspaceBytes);
    ASSERT_TRUE(gemm.ok()) << gemm.status();
    gemm_ = *std::move(gemm);
    ASSERT_EQ(cudaStreamCreateWithFlags(&compute_, cudaStreamNonBlocking), cudaSuccess);
    ASSERT_EQ(cudaStreamCreateWithFlags(&communication_, cudaStreamNonBlocking), cudaSuccess);
    timer_ = std::make_unique<PhaseTimer>(compute_);
  }
  void TearDown() override {
    timer_.reset();
    gemm_.reset();
    cudaStreamDestroy(communication_);
    cudaStreamDestroy(compute_);
    cudaFree(workspace_);
  }

  // DeviceArray fills its buffers on the legacy default stream (a memset, and a copy from
  // pageable memory that may return before its DMA has landed), which the non-blocking streams
  // the overlap runs on do not wait for: every test settles its buffers before an overlap
  // reads or writes them.
  static void Settle() { ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess); }

  // cuBLASLt's fp8 GEMMs need compute capability 8.9; the probe's fp8 training 9.0.
  static void RequireFp8() {
    ASSERT_GE(ComputeCapability(), 90) << "the probe's fp8 training needs compute capability 9.0";
  }

  std::unique_ptr<TensorParallelOverlap> Overlap(int64_t hidden, TensorParallelTransport* t) {
    absl::StatusOr<TensorParallelOverlapPlan> plan = TensorParallelOverlapPlanOf(t->size(), hidden);
    EXPECT_TRUE(plan.ok()) << plan.status();
    absl::StatusOr<std::unique_ptr<TensorParallelOverlap>> overlap = TensorParallelOverlap::Create(
        *plan, t, gemm_.get(), compute_, communication_, timer_.get());
    EXPECT_TRUE(overlap.ok()) << overlap.status();
    return *std::move(overlap);
  }

  void* workspace_ = nullptr;
  std::unique_ptr<Gemm> gemm_;
  cudaStream_t compute_ = nullptr;
  cudaStream_t communication_ = nullptr;
  std::unique_ptr<PhaseTimer> timer_;
};

bool SameBits(const std::vector<bf16>& a, const std::vector<bf16>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(bf16)) == 0;
}

struct RingCase {
  int64_t size;
  int64_t rank;
  bool input_gradient;  // the row-parallel backward's product (proj_dgrad), else a forward
};

class RingTest : public TensorParallelOverlapTest,
                 public ::testing::WithParamInterface<RingCase> {};

TEST_P(RingTest, AllGatherGemmMatchesTheGatheredProduct) {
  const RingCase c = GetParam();
  const int64_t rows = 64;
  const int64_t k = 128;
  const int64_t n = 96;
  const int64_t T = c.size * rows;
  const std::vector<bf16> all = RandomBf16(T * k, 1);
  const std::vector<bf16> weight = RandomBf16(c.input_gradient ? k * n : n * k, 2);
  const std::vector<bf16> own(all.begin() + c.rank * rows * k,
                              all.begin() + (c.rank + 1) * rows * k);
  DeviceArray<bf16> all_d(all), weight_d(weight), own_d(own), gathered(T * k), out(T * n);
  SimulatedTransport transport(c.size, c.rank, all_d.get());
  std::unique_ptr<TensorParallelOverlap> overlap = Overlap(n, &transport);
  // Forward: out [T, n] = gathered [T, k] W^T, W [n, k]; backward: d_in [T, n] = d_out [T, k]
  // W, W [k, n] (LinearInputGradient with outputs k, inputs n).
  const GemmArgs product =
      c.input_gradient ? LinearInputGradient(gathered.get(), weight_d.get(), out.get(), T, k, n)
                       : LinearForward(gathered.get(), weight_d.get(), out.get(), T, n, k);
  Settle();
  ASSERT_TRUE(overlap->AllGatherGemm(product, own_d.get(), rows, /*keep_own=*/true).ok());

  const std::vector<double> a = ToDouble(all);
  const std::vector<double> w = ToDouble(weight);
  const std::vector<double> reference = ReferenceProduct(
      T, n, k, [&](int64_t i, int64_t p) { return a[i * k + p]; },
      [&](int64_t p, int64_t j) { return c.input_gradient ? w[p * n + j] : w[j * k + p]; });
  EXPECT_LT(RelativeError(ToDouble(out.ToHost()), reference), 1e-2);
  // Whole, with the rank's own rows copied in: the weight gradient reads it.
  EXPECT_TRUE(SameBits(gathered.ToHost(), all));
  // The first exchange sends the rank's own rows in place.
  ASSERT_EQ(static_cast<int64_t>(transport.sent().size()), c.size - 1);
  EXPECT_EQ(transport.sent()[0], own_d.get());
}

INSTANTIATE_TEST_SUITE_P(Ranks, RingTest,
                         ::testing::Values(RingCase{2, 1, false}, RingCase{3, 0, false},
                                           RingCase{4, 2, false}, RingCase{4, 3, true}));

TEST_F(TensorParallelOverlapTest, RingWithoutKeepingLeavesTheOwnRowsAlone) {
  const int64_t size = 3;
  const int64_t rank = 1;
  const int64_t rows = 32;
  const int64_t k = 64;
  const std::vector<bf16> all = RandomBf16(size * rows * k, 3);
  const std::vector<bf16> own(all.begin() + rank * rows * k, all.begin() + (rank + 1) * rows * k);
  DeviceArray<bf16> all_d(all), weight(RandomBf16(64 * k, 4)), own_d(own),
      gathered(size * rows * k), out(size * rows * 64);
  SimulatedTransport transport(size, rank, all_d.get());
  std::unique_ptr<TensorParallelOverlap> overlap = Overlap(64, &transport);
  Settle();
  ASSERT_TRUE(overlap
                  ->AllGatherGemm(
                      LinearForward(gathered.get(), weight.get(), out.get(), size * rows, 64, k),
                      own_d.get(), rows, /*keep_own=*/false)
                  .ok());
  const std::vector<bf16> host = gathered.ToHost();
  for (int64_t i = rank * rows * k; i < (rank + 1) * rows * k; ++i) {
    uint16_t bits;
    std::memcpy(&bits, &host[i], sizeof(bits));
    ASSERT_EQ(bits, 0xffff) << "element " << i;  // DeviceArray's poison
  }
}

TEST_F(TensorParallelOverlapTest, GemmReduceScatterPlacesEveryColumnChunk) {
  // hidden 128: 4 splits; 48: 2 splits of 24 columns.
  for (const int64_t n : {128, 48}) {
    const int64_t size = 4;
    const int64_t rank = 1;
    const int64_t rows = 32;
    const int64_t k = 64;
    const int64_t T = size * rows;
    const std::vector<bf16> in = RandomBf16(T * k, 5);
    const std::vector<bf16> weight = RandomBf16(n * k, 6);
    DeviceArray<bf16> in_d(in), weight_d(weight), partial(T * n), reduced(rows * n), out(rows * n);
    SimulatedTransport transport(size, rank, nullptr);
    std::unique_ptr<TensorParallelOverlap> overlap = Overlap(n, &transport);
    Settle();
    ASSERT_TRUE(
        overlap
            ->GemmReduceScatter(LinearForward(in_d.get(), weight_d.get(), partial.get(), T, n, k),
                                rows, reduced.get(), out.get())
            .ok());
    // The rank's rows of the product (the simulated ranks add zeros).
    const std::vector<double> a = ToDouble(in);
    const std::vector<double> w = ToDouble(weight);
    const std::vector<double> reference = ReferenceProduct(
        rows, n, k, [&](int64_t i, int64_t p) { return a[(rank * rows + i) * k + p]; },
        [&](int64_t p, int64_t j) { return w[j * k + p]; });
    EXPECT_LT(RelativeError(ToDouble(out.ToHost()), reference), 1e-2) << "n " << n;
  }
}

TEST_F(TensorParallelOverlapTest, BulkBackwardGathersAndReducesBesideTheGemms) {
  const int64_t size = 2;
  const int64_t rank = 1;
  const int64_t rows = 64;
  const int64_t h = 64;   // the linear's inputs
  const int64_t n = 128;  // its outputs
  const int64_t T = size * rows;
  const std::vector<bf16> all = RandomBf16(T * h, 7);
  const std::vector<bf16> own(all.begin() + rank * rows * h, all.begin() + (rank + 1) * rows * h);
  const std::vector<bf16> d_out = RandomBf16(T * n, 8);
  const std::vector<bf16> weight = RandomBf16(n * h, 9);
  DeviceArray<bf16> all_d(all), own_d(own), d_out_d(d_out), weight_d(weight), gathered(T * h),
      partial(T * h), reduced(rows * h);
  DeviceArray<float> d_weight(std::vector<float>(n * h, 0.0f));
  SimulatedTransport transport(size, rank, all_d.get());
  std::unique_ptr<TensorParallelOverlap> overlap = Overlap(h, &transport);
  Settle();
  ASSERT_TRUE(
      overlap
          ->BulkBackward(
              own_d.get(), gathered.get(), rows * h,
              LinearInputGradient(d_out_d.get(), weight_d.get(), partial.get(), T, n, h),
              LinearWeightGradient(d_out_d.get(), gathered.get(), d_weight.get(), true, T, n, h),
              reduced.get(), rows * h)
          .ok());
  EXPECT_TRUE(SameBits(gathered.ToHost(), all));
  const std::vector<double> x = ToDouble(all);
  const std::vector<double> g = ToDouble(d_out);
  const std::vector<double> w = ToDouble(weight);
  const std::vector<double> weight_reference = ReferenceProduct(
      n, h, T, [&](int64_t i, int64_t p) { return g[p * n + i]; },
      [&](int64_t p, int64_t j) { return x[p * h + j]; });
  EXPECT_LT(RelativeError(ToDouble(d_weight.ToHost()), weight_reference), 1e-2);
  const std::vector<double> input_reference = ReferenceProduct(
      rows, h, n, [&](int64_t i, int64_t p) { return g[(rank * rows + i) * n + p]; },
      [&](int64_t p, int64_t j) { return w[p * h + j]; });
  EXPECT_LT(RelativeError(ToDouble(reduced.ToHost()), input_reference), 1e-2);
}

struct Fp8RingCase {
  int64_t size;
  int64_t rank;
  bool input_gradient;  // proj_dgrad: E5M2 output gradient rows, cast in place, else qkv_fprop
};

class Fp8RingTest : public TensorParallelOverlapTest,
                    public ::testing::WithParamInterface<Fp8RingCase> {};

TEST_P(Fp8RingTest, AllGatherGemmMatchesTheGatheredFp8Product) {
  RequireFp8();
  const Fp8RingCase c = GetParam();
  const int64_t rows = 64;
  const int64_t k = 128;
  const int64_t n = 96;
  const int64_t T = c.size * rows;
  const Fp8Format a_format = c.input_gradient ? Fp8Format::kE5M2 : Fp8Format::kE4M3;
  const std::vector<uint8_t> all = RandomFp8(T * k, 21, a_format, c.input_gradient ? 1e-3f : 1);
  // B stored [n, k] in both: the forward's weight, the input gradient's weight transpose.
  const std::vector<uint8_t> weight = RandomFp8(n * k, 22, Fp8Format::kE4M3, 0.05f);
  const float a_inverse = c.input_gradient ? 0.25f : 0.5f;
  const float b_inverse = 0.125f;
  DeviceArray<uint8_t> all_d(all), weight_d(weight), gathered(T * k), own_d(rows * k);
  DeviceArray<float> a_inverse_d(std::vector<float>{a_inverse}),
      b_inverse_d(std::vector<float>{b_inverse});
  DeviceArray<bf16> out(T * n);
  // The output gradient's rows are cast in their place of the gathered buffer
  // (grad_output_preprocess); the forward's are the kept rows elsewhere.
  uint8_t* own = c.input_gradient ? gathered.get() + c.rank * rows * k : own_d.get();
  ASSERT_EQ(cudaMemcpy(own, all.data() + c.rank * rows * k, rows * k, cudaMemcpyHostToDevice),
            cudaSuccess);
  SimulatedTransport transport(c.size, c.rank, all_d.get());
  std::unique_ptr<TensorParallelOverlap> overlap = Overlap(n, &transport);
  const Fp8Operand a{gathered.get(), a_format, a_inverse_d.get()};
  const Fp8Operand b{weight_d.get(), Fp8Format::kE4M3, b_inverse_d.get()};
  const Fp8GemmArgs product = c.input_gradient ? Fp8LinearInputGradient(a, b, out.get(), T, k, n)
                                               : Fp8LinearForward(a, b, out.get(), T, n, k);
  Settle();
  const absl::Status status =
      overlap->AllGatherGemm(product, own, rows, /*keep_own=*/!c.input_gradient);
  ASSERT_TRUE(status.ok()) << status;

  const std::vector<double> x = Dequantize(all, a_format, a_inverse);
  const std::vector<double> w = Dequantize(weight, Fp8Format::kE4M3, b_inverse);
  const std::vector<double> reference = ReferenceProduct(
      T, n, k, [&](int64_t i, int64_t p) { return x[i * k + p]; },
      [&](int64_t p, int64_t j) { return w[j * k + p]; });
  EXPECT_LT(RelativeError(ToDouble(out.ToHost()), reference), 1e-2);
  // Whole either way: kept, or cast there; the weight gradient transposes it.
  EXPECT_EQ(gathered.ToHost(), all);
  ASSERT_EQ(static_cast<int64_t>(transport.sent().size()), c.size - 1);
  EXPECT_EQ(transport.sent()[0], own);
}

INSTANTIATE_TEST_SUITE_P(Ranks, Fp8RingTest,
                         ::testing::Values(Fp8RingCase{2, 0, false}, Fp8RingCase{4, 1, false},
                                           Fp8RingCase{2, 1, true}, Fp8RingCase{4, 3, true}));

TEST_F(TensorParallelOverlapTest, Fp8GemmReduceScatterPlacesEveryColumnChunk) {
  RequireFp8();
  // hidden 128: 4 splits of 32 columns; 48: 2 splits of 24.
  for (const int64_t n : {128, 48}) {
    const int64_t size = 2;
    const int64_t rank = 1;
    const int64_t rows = 32;
    const int64_t k = 64;
    const int64_t T = size * rows;
    const std::vector<uint8_t> in = RandomFp8(T * k, 23, Fp8Format::kE4M3, 1);
    const std::vector<uint8_t> weight = RandomFp8(n * k, 24, Fp8Format::kE4M3, 0.05f);
    DeviceArray<uint8_t> in_d(in), weight_d(weight);
    DeviceArray<float> in_inverse(std::vector<float>{0.5f}),
        weight_inverse(std::vector<float>{0.25f});
    DeviceArray<bf16> partial(T * n), reduced(rows * n), out(rows * n);
    SimulatedTransport transport(size, rank, nullptr);
    std::unique_ptr<TensorParallelOverlap> overlap = Overlap(n, &transport);
    Settle();
    const absl::Status status = overlap->GemmReduceScatter(
        Fp8LinearForward({in_d.get(), Fp8Format::kE4M3, in_inverse.get()},
                         {weight_d.get(), Fp8Format::kE4M3, weight_inverse.get()}, partial.get(), T,
                         n, k),
        rows, reduced.get(), out.get());
    ASSERT_TRUE(status.ok()) << status;
    const std::vector<double> x = Dequantize(in, Fp8Format::kE4M3, 0.5);
    const std::vector<double> w = Dequantize(weight, Fp8Format::kE4M3, 0.25);
    const std::vector<double> reference = ReferenceProduct(
        rows, n, k, [&](int64_t i, int64_t p) { return x[(rank * rows + i) * k + p]; },
        [&](int64_t p, int64_t j) { return w[j * k + p]; });
    EXPECT_LT(RelativeError(ToDouble(out.ToHost()), reference), 1e-2) << "n " << n;
  }
}

TEST_F(TensorParallelOverlapTest, Fp8BulkBackwardGathersTransposesAndReduces) {
  RequireFp8();
  const int64_t size = 2;
  const int64_t rank = 0;
  const int64_t rows = 64;
  const int64_t h = 64;   // the linear's inputs
  const int64_t n = 128;  // its outputs
  const int64_t T = size * rows;
  const std::vector<uint8_t> all = RandomFp8(T * h, 25, Fp8Format::kE4M3, 1);
  const std::vector<uint8_t> own(all.begin() + rank * rows * h,
                                 all.begin() + (rank + 1) * rows * h);
  // The output gradient [T, n] and its transpose, and the weight's transpose [h, n].
  const std::vector<uint8_t> d_out = RandomFp8(T * n, 26, Fp8Format::kE5M2, 1e-3f);
  std::vector<uint8_t> d_out_t(n * T);
  for (int64_t i = 0; i < T; ++i) {
    for (int64_t j = 0; j < n; ++j) d_out_t[j * T + i] = d_out[i * n + j];
  }
  const std::vector<uint8_t> weight_t = RandomFp8(h * n, 27, Fp8Format::kE4M3, 0.05f);
  DeviceArray<uint8_t> all_d(all), own_d(own), d_out_d(d_out), d_out_t_d(d_out_t),
      weight_t_d(weight_t), gathered(T * h), gathered_t(h * T);
  DeviceArray<float> x_inverse(std::vector<float>{0.5f}), g_inverse(std::vector<float>{2.0f}),
      w_inverse(std::vector<float>{0.25f});
  DeviceArray<bf16> partial(T * h), reduced(rows * h);
  DeviceArray<float> d_weight(std::vector<float>(n * h, 0.0f));
  SimulatedTransport transport(size, rank, all_d.get());
  std::unique_ptr<TensorParallelOverlap> overlap = Overlap(h, &transport);
  Settle();
  const absl::Status status = overlap->BulkBackward(
      own_d.get(), gathered.get(), rows, h, gathered_t.get(),
      Fp8LinearInputGradient({d_out_d.get(), Fp8Format::kE5M2, g_inverse.get()},
                             {weight_t_d.get(), Fp8Format::kE4M3, w_inverse.get()}, partial.get(),
                             T, n, h),
      Fp8LinearWeightGradient({d_out_t_d.get(), Fp8Format::kE5M2, g_inverse.get()},
                              {gathered_t.get(), Fp8Format::kE4M3, x_inverse.get()}, d_weight.get(),
                              true, T, n, h),
      reduced.get(), rows * h);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(gathered.ToHost(), all);
  const std::vector<uint8_t> transposed = gathered_t.ToHost();
  for (int64_t i = 0; i < T * h; ++i) {
    ASSERT_EQ(transposed[(i % h) * T + i / h], all[i]) << "element " << i;
  }
  const std::vector<double> x = Dequantize(all, Fp8Format::kE4M3, 0.5);
  const std::vector<double> g = Dequantize(d_out, Fp8Format::kE5M2, 2.0);
  const std::vector<double> w = Dequantize(weight_t, Fp8Format::kE4M3, 0.25);
  const std::vector<double> weight_reference = ReferenceProduct(
      n, h, T, [&](int64_t i, int64_t p) { return g[p * n + i]; },
      [&](int64_t p, int64_t j) { return x[p * h + j]; });
  EXPECT_LT(RelativeError(ToDouble(d_weight.ToHost()), weight_reference), 1e-3);
  // d_in = d_out weight, weight [n, h] = weight_t^T.
  const std::vector<double> input_reference = ReferenceProduct(
      rows, h, n, [&](int64_t i, int64_t p) { return g[(rank * rows + i) * n + p]; },
      [&](int64_t p, int64_t j) { return w[j * n + p]; });
  EXPECT_LT(RelativeError(ToDouble(reduced.ToHost()), input_reference), 1e-2);
}

TEST_F(TensorParallelOverlapTest, NcclTransportOverAOneRankGroup) {
  // With one rank the ring's next and previous rank is the rank itself: each transfer copies.
  ncclComm_t comm = nullptr;
  int device = 0;
  ASSERT_EQ(ncclCommInitAll(&comm, 1, &device), ncclSuccess);
  NcclTensorParallelTransport transport(comm, 1, 0);
  const std::vector<bf16> values = RandomBf16(4096, 10);
  DeviceArray<bf16> send(values), exchanged(4096), gathered(4096), reduced(4096);
  Settle();
  ASSERT_TRUE(
      transport.Exchange(send.get(), exchanged.get(), 4096 * sizeof(bf16), communication_).ok());
  ASSERT_TRUE(
      transport.AllGather(send.get(), gathered.get(), 4096 * sizeof(bf16), communication_).ok());
  ASSERT_TRUE(transport.ReduceScatter(send.get(), reduced.get(), 4096, communication_).ok());
  EXPECT_TRUE(SameBits(exchanged.ToHost(), values));
  EXPECT_TRUE(SameBits(gathered.ToHost(), values));
  EXPECT_TRUE(SameBits(reduced.ToHost(), values));
  ncclCommDestroy(comm);
}

TEST_F(TensorParallelOverlapTest, RefusesAPlanForOtherRanks) {
  SimulatedTransport transport(3, 0, nullptr);
  absl::StatusOr<std::unique_ptr<TensorParallelOverlap>> overlap =
      TensorParallelOverlap::Create(*TensorParallelOverlapPlanOf(2, 64), &transport, gemm_.get(),
                                    compute_, communication_, timer_.get());
  EXPECT_EQ(overlap.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace paratune
