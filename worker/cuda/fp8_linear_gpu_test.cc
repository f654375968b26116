// Fp8Linears on the GPU (fp8_linear.h): a row-parallel and a column-parallel (sequence
// parallel, over a one-rank tensor group) linear's forward and backward against float64
// products of the quantized operands the GPU kept, the delayed-scaling update at the end of
// each pass against the recipe, and the weights cast once per step; with fp8 parameters the
// fp8 weights read as they are, with their own scale inverse, and transposed once per step.
// Needs compute capability 9.0 (H100).
#include <cuda_fp8.h>
#include <nccl.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "worker/cuda/fp8_linear.h"
#include "worker/cuda/fp8_test_util.h"
#include "worker/cuda/gemm.h"
#include "worker/cuda/gpu_test_util.h"
#include "worker/cuda/phase_timer.h"
#include "worker/probe/footprint_plan.h"
#include "worker/probe/fp8_scaling.h"
#include "worker/probe/fp8_state_layout.h"

namespace paratune {
namespace {

using bf16 = __nv_bfloat16;

constexpr int kInput = static_cast<int>(Fp8ForwardTensor::kInput);
constexpr int kWeight = static_cast<int>(Fp8ForwardTensor::kWeight);
constexpr int kOutput = static_cast<int>(Fp8ForwardTensor::kOutput);
constexpr int kOutputGradient = static_cast<int>(Fp8BackwardTensor::kOutputGradient);
constexpr int kInputGradient = static_cast<int>(Fp8BackwardTensor::kInputGradient);

// Parameters: sequence parallelism, fp8 parameters.
class Fp8LinearTest : public ::testing::TestWithParam<std::tuple<bool, bool>> {
 protected:
  bool sequence_parallel() const { return std::get<0>(GetParam()); }
  bool fp8_parameters() const { return std::get<1>(GetParam()); }

  void SetUp() override {
    ASSERT_GE(ComputeCapability(), 90) << "the probe's fp8 training needs compute capability 9.0";
    int device = 0;
    ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
    shapes_ = SmallFp8Shapes(sequence_parallel());
    StageLayers layers;
    layers.chunk_layers = {1};
    layout_ = LayoutFp8State(shapes_, layers, kExportedFp8Recipe, fp8_parameters());
    weight_copies_ = std::make_unique<DeviceArray<uint8_t>>(layout_.weight_bytes);
    scaling_ = std::make_unique<DeviceArray<uint8_t>>(layout_.scaling_bytes);
    const int64_t T = shapes_.tokens;
    input_ = std::make_unique<DeviceArray<uint8_t>>(T * 128);
    input_t_ = std::make_unique<DeviceArray<uint8_t>>(T * 128);
    output_gradient_ = std::make_unique<DeviceArray<uint8_t>>(T * 192);
    output_gradient_t_ = std::make_unique<DeviceArray<uint8_t>>(T * 192);
    ASSERT_EQ(cudaMalloc(&workspace_, kGemmWorkspaceBytes), cudaSuccess);
    absl::StatusOr<std::unique_ptr<Gemm>> gemm = Gemm::Create(workspace_, kGemmWorkspaceBytes);
    ASSERT_TRUE(gemm.ok()) << gemm.status();
    gemm_ = *std::move(gemm);
    // A one-rank group: its all-gathers copy and its maximum changes nothing, but the calls
    // are the ones a probe makes.
    ASSERT_EQ(ncclCommInitAll(&comm_, 1, &device), ncclSuccess);
    Fp8LinearBuffers buffers;
    buffers.weight_copies = reinterpret_cast<char*>(weight_copies_->get());
    buffers.scaling_state = reinterpret_cast<char*>(scaling_->get());
    buffers.input = input_->get();
    buffers.input_transposed = input_t_->get();
    buffers.output_gradient = output_gradient_->get();
    buffers.output_gradient_transposed = output_gradient_t_->get();
    linears_ = std::make_unique<Fp8Linears>(shapes_, layout_, std::vector<int64_t>{0}, buffers,
                                            gemm_.get(), sequence_parallel() ? comm_ : nullptr,
                                            comm_, kExportedFp8Recipe, nullptr, &timer_);
    const absl::Status status = linears_->Initialize();
    ASSERT_TRUE(status.ok()) << status;
  }
  void TearDown() override {
    linears_.reset();
    gemm_.reset();
    cudaFree(workspace_);
    if (comm_ != nullptr) ncclCommDestroy(comm_);
  }

  // The fp32 value at `offset` + index of the scaling state.
  float Scaling(int64_t offset, int64_t index) const {
    return FloatAt(*scaling_, offset + 4 * index);
  }
  float ScaleInverse(const Fp8ScalingGroup& group, int64_t index) const {
    return FloatAt(*scaling_, group.ScaleInverse(index));
  }
  // With fp8 parameters, the inverse of the scale the optimizer last cast the weight with
  // (Fp8Parameters keeps it beside the weight's transpose).
  void SetWeightScaleInverse(Fp8Linear linear, float inverse) {
    ASSERT_EQ(cudaMemcpy(weight_copies_->get() +
                             layout_.weights[0][static_cast<int>(linear)].scale_inverse,
                         &inverse, sizeof(float), cudaMemcpyHostToDevice),
              cudaSuccess);
  }
  float WeightScaleInverse(Fp8Linear linear) const {
    return FloatAt(*weight_copies_, layout_.weights[0][static_cast<int>(linear)].scale_inverse);
  }
  // Checks that the weight bytes the forward GEMM reads (the weight copy, or with fp8
  // parameters the fp8 weight itself) and their transpose are `expected` [outputs, inputs].
  void ExpectWeightBytes(Fp8Linear linear, const std::vector<uint8_t>& expected) const {
    const LinearShape& shape = LinearShapeOf(shapes_, linear);
    const std::vector<uint8_t> bytes = weight_copies_->ToHost();
    const Fp8WeightCopy& copy = layout_.weights[0][static_cast<int>(linear)];
    std::vector<uint8_t> forward, transposed(shape.WeightElements());
    if (!fp8_parameters()) {
      forward.assign(bytes.begin() + copy.weight,
                     bytes.begin() + copy.weight + shape.WeightElements());
      EXPECT_EQ(Mismatches(forward, expected), 0) << "weight copy";
    }
    for (int64_t i = 0; i < shape.WeightElements(); ++i) {
      const int64_t o = i / shape.inputs, p = i % shape.inputs;
      transposed[i] = bytes[copy.transposed + p * shape.outputs + o];
    }
    EXPECT_EQ(Mismatches(transposed, expected), 0) << "transposed weight copy";
  }

  // How many bytes differ.
  static int64_t Mismatches(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
    EXPECT_EQ(a.size(), b.size());
    int64_t differ = 0;
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) differ += a[i] != b[i];
    return differ;
  }

  // `values` quantized by the CPU with `scale` (QuantizeToFp8).
  static std::vector<uint8_t> Quantize(const std::vector<bf16>& values, float scale,
                                       Fp8Format format) {
    std::vector<uint8_t> bytes(values.size());
    for (size_t i = 0; i < values.size(); ++i) {
      bytes[i] = QuantizeToFp8(__bfloat162float(values[i]), scale, format);
    }
    return bytes;
  }

  // Runs a forward and backward pass of `linear` and checks them against float64 products of
  // operands the CPU quantized with the recipe's scales (fp8_scaling.h), after checking that
  // the GPU's fp8 operands are those bytes; the step is the probe's: passes ended, scales
  // updated.
  void CheckLinear(Fp8Linear linear) {
    const LinearShape& shape = LinearShapeOf(shapes_, linear);
    const bool column = linear == Fp8Linear::kQkv || linear == Fp8Linear::kGateUp;
    const int64_t rows = shape.rows, in_n = shape.inputs, out_n = shape.outputs;
    const std::vector<bf16> weight_values = RandomBf16(out_n * in_n, 11, 0.05f);
    const std::vector<bf16> in_values = RandomBf16(rows * in_n, 12);
    const std::vector<bf16> d_out_values = RandomBf16(rows * out_n, 13, 1e-3f);
    DeviceArray<bf16> weight(weight_values), in(in_values), d_out(d_out_values);
    // With fp8 parameters the weight is E4M3 already, as the optimizer last cast it, with the
    // inverse of that cast's scale beside its transpose (Fp8Parameters).
    const std::vector<uint8_t> fp8_weight_bytes =
        RandomFp8(out_n * in_n, 11, Fp8Format::kE4M3, 400.0f);
    DeviceArray<uint8_t> fp8_weight(fp8_weight_bytes);
    constexpr float kFp8WeightScaleInverse = 1.0f / 4096;
    if (fp8_parameters()) SetWeightScaleInverse(linear, kFp8WeightScaleInverse);
    DeviceArray<bf16> out(rows * out_n), d_in(rows * in_n);
    DeviceArray<uint8_t> kept(rows * in_n);
    DeviceArray<float> kept_inverse(1);
    DeviceArray<float> d_weight(std::vector<float>(out_n * in_n, 0.0f));
    const void* site_weight = fp8_parameters() ? static_cast<const void*>(fp8_weight.get())
                                               : static_cast<const void*>(weight.get());
    const Fp8LinearSite site{0, 0, linear, site_weight, kept.get(), kept_inverse.get()};
    auto forward = [&] {
      return column ? linears_->ColumnForward(site, in.get(), out.get())
                    : linears_->RowForward(site, in.get(), out.get());
    };
    const Fp8ScalingGroup& fwd = layout_.forward[0];
    const Fp8ScalingGroup& bwd = layout_.backward[0];

    // Step 1 casts with scale 1 and sets the scales from the amaxes it saw; fp8 weights are not
    // cast here (the optimizer records their amax), so their scale stays.
    linears_->StartStep();
    ASSERT_TRUE(forward().ok());
    ASSERT_TRUE(linears_->EndForward(0).ok());
    const float input_scale = DelayedScale(MaxAbs(in_values), 1.0f, kFp8E4M3Max);
    const float weight_scale =
        fp8_parameters() ? 1.0f : DelayedScale(MaxAbs(weight_values), 1.0f, kFp8E4M3Max);
    EXPECT_FLOAT_EQ(Scaling(fwd.scale, fwd.Index(0, linear, kInput)), input_scale);
    EXPECT_FLOAT_EQ(Scaling(fwd.scale, fwd.Index(0, linear, kWeight)), weight_scale);
    EXPECT_FLOAT_EQ(ScaleInverse(fwd, fwd.Index(0, linear, kWeight)), 1 / weight_scale);
    EXPECT_EQ(Scaling(fwd.scale, fwd.Index(0, linear, kOutput)), 1.0f);  // never measured
    for (int64_t t = 0; t < fwd.tensors; ++t) EXPECT_EQ(Scaling(fwd.amax_history, t), 0.0f);

    // Step 2 casts the weight again with its new scale (an fp8 weight keeps its own); the
    // forward and backward products are those of the operands the CPU quantizes alike.
    linears_->StartStep();
    ASSERT_TRUE(forward().ok());
    const float weight_inverse = fp8_parameters() ? kFp8WeightScaleInverse : 1 / weight_scale;
    EXPECT_FLOAT_EQ(WeightScaleInverse(linear), weight_inverse);
    EXPECT_FLOAT_EQ(kept_inverse.ToHost()[0], 1 / input_scale);
    const std::vector<uint8_t> w_bytes =
        fp8_parameters() ? fp8_weight_bytes
                         : Quantize(weight_values, weight_scale, Fp8Format::kE4M3);
    ExpectWeightBytes(linear, w_bytes);
    const std::vector<double> W = Dequantize(w_bytes, Fp8Format::kE4M3, weight_inverse);
    // Column-parallel with sequence parallelism keeps the rows [rows, inputs]; otherwise the
    // transpose [inputs, rows].
    const std::vector<uint8_t> x_bytes = Quantize(in_values, input_scale, Fp8Format::kE4M3);
    const std::vector<uint8_t> kept_bytes = kept.ToHost();
    std::vector<uint8_t> kept_rows(rows * in_n);
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t p = 0; p < in_n; ++p) {
        kept_rows[i * in_n + p] =
            column && sequence_parallel() ? kept_bytes[i * in_n + p] : kept_bytes[p * rows + i];
      }
    }
    EXPECT_EQ(Mismatches(kept_rows, x_bytes), 0) << "kept input";
    const std::vector<double> X = Dequantize(x_bytes, Fp8Format::kE4M3, 1 / input_scale);
    const std::vector<double> y = ReferenceProduct(
        rows, out_n, in_n, [&](int64_t i, int64_t p) { return X[i * in_n + p]; },
        [&](int64_t p, int64_t j) { return W[j * in_n + p]; });
    EXPECT_LT(RelativeError(ToDouble(out.ToHost()), y), 1e-2);
    ASSERT_TRUE(linears_->EndForward(0).ok());

    ASSERT_TRUE(linears_->Backward(site, d_out.get(), d_in.get(), d_weight.get(), true).ok());
    EXPECT_EQ(ScaleInverse(bwd, bwd.Index(0, linear, kOutputGradient)), 1.0f)
        << "no backward pass has ended yet";
    const std::vector<uint8_t> dy_bytes = Quantize(d_out_values, 1.0f, Fp8Format::kE5M2);
    std::vector<uint8_t> dy_gpu = output_gradient_->ToHost();
    dy_gpu.resize(dy_bytes.size());  // the buffer holds the widest linear's
    EXPECT_EQ(Mismatches(dy_gpu, dy_bytes), 0) << "output gradient";
    const std::vector<double> DY = Dequantize(dy_bytes, Fp8Format::kE5M2, 1.0);
    const std::vector<double> dx = ReferenceProduct(
        rows, in_n, out_n, [&](int64_t i, int64_t p) { return DY[i * out_n + p]; },
        [&](int64_t p, int64_t j) { return W[p * in_n + j]; });
    const std::vector<double> dw = ReferenceProduct(
        out_n, in_n, rows, [&](int64_t i, int64_t p) { return DY[p * out_n + i]; },
        [&](int64_t p, int64_t j) { return X[p * in_n + j]; });
    EXPECT_LT(RelativeError(ToDouble(d_in.ToHost()), dx), 1e-2);
    EXPECT_LT(RelativeError(ToDouble(d_weight.ToHost()), dw), 1e-3);
    ASSERT_TRUE(linears_->EndBackward(0).ok());
    EXPECT_FLOAT_EQ(Scaling(bwd.scale, bwd.Index(0, linear, kOutputGradient)),
                    DelayedScale(MaxAbs(d_out_values), 1.0f, kFp8E5M2Max));
    EXPECT_EQ(Scaling(bwd.scale, bwd.Index(0, linear, kInputGradient)), 1.0f);

    // A later micro-batch of the step reuses the weight's copy (is_first_microbatch); the
    // next step casts (or transposes) the weight again.
    const std::vector<uint8_t> copies = weight_copies_->ToHost();
    const std::vector<bf16> other = RandomBf16(out_n * in_n, 14, 0.05f);
    const std::vector<uint8_t> other_fp8 = RandomFp8(out_n * in_n, 14, Fp8Format::kE4M3, 400.0f);
    ASSERT_EQ(
        cudaMemcpy(weight.get(), other.data(), other.size() * sizeof(bf16), cudaMemcpyHostToDevice),
        cudaSuccess);
    ASSERT_EQ(
        cudaMemcpy(fp8_weight.get(), other_fp8.data(), other_fp8.size(), cudaMemcpyHostToDevice),
        cudaSuccess);
    ASSERT_TRUE(forward().ok());
    EXPECT_EQ(weight_copies_->ToHost(), copies);
    ASSERT_TRUE(linears_->EndForward(0).ok());
    linears_->StartStep();
    ASSERT_TRUE(forward().ok());
    EXPECT_NE(weight_copies_->ToHost(), copies);
  }

  ShardShapes shapes_;
  Fp8StateLayout layout_;
  std::unique_ptr<DeviceArray<uint8_t>> weight_copies_, scaling_, input_, input_t_,
      output_gradient_, output_gradient_t_;
  void* workspace_ = nullptr;
  std::unique_ptr<Gemm> gemm_;
  ncclComm_t comm_ = nullptr;
  PhaseTimer timer_{nullptr};
  std::unique_ptr<Fp8Linears> linears_;
};

TEST_P(Fp8LinearTest, RowParallelDownProjection) { CheckLinear(Fp8Linear::kDown); }

// With sequence parallelism and no overlap the row-parallel backward casts the rank's rows and
// gathers them in fp8 (over a one-rank group here: the rank's rows are every row), which must
// give Backward's operands and products from the bf16 gradient gathered first.
TEST_P(Fp8LinearTest, RowParallelBackwardGathersFp8Rows) {
  const LinearShape& shape = LinearShapeOf(shapes_, Fp8Linear::kDown);
  const int64_t rows = shape.rows, in_n = shape.inputs, out_n = shape.outputs;
  DeviceArray<bf16> weight(RandomBf16(out_n * in_n, 21, 0.05f)), in(RandomBf16(rows * in_n, 22)),
      d_out(RandomBf16(rows * out_n, 23, 1e-3f)), out(rows * out_n), d_in(rows * in_n),
      d_in_gathered(rows * in_n);
  DeviceArray<uint8_t> fp8_weight(RandomFp8(out_n * in_n, 21, Fp8Format::kE4M3, 400.0f));
  DeviceArray<uint8_t> kept(rows * in_n);
  DeviceArray<float> kept_inverse(1);
  DeviceArray<float> d_weight(std::vector<float>(out_n * in_n, 0.0f)),
      d_weight_gathered(std::vector<float>(out_n * in_n, 0.0f));
  const void* site_weight = fp8_parameters() ? static_cast<const void*>(fp8_weight.get())
                                             : static_cast<const void*>(weight.get());
  const Fp8LinearSite site{0, 0, Fp8Linear::kDown, site_weight, kept.get(), kept_inverse.get()};
  if (fp8_parameters()) SetWeightScaleInverse(Fp8Linear::kDown, 1.0f / 4096);
  if (!sequence_parallel()) {
    EXPECT_EQ(linears_
                  ->RowBackwardSequenceParallel(site, d_out.get(), d_in_gathered.get(),
                                                d_weight_gathered.get(), true)
                  .code(),
              absl::StatusCode::kFailedPrecondition);
    return;
  }
  Fp8LinearSite column = site;
  column.linear = Fp8Linear::kQkv;
  EXPECT_EQ(linears_
                ->RowBackwardSequenceParallel(column, d_out.get(), d_in_gathered.get(),
                                              d_weight_gathered.get(), true)
                .code(),
            absl::StatusCode::kInvalidArgument);
  linears_->StartStep();
  ASSERT_TRUE(linears_->RowForward(site, in.get(), out.get()).ok());
  ASSERT_TRUE(linears_->EndForward(0).ok());
  ASSERT_TRUE(linears_->Backward(site, d_out.get(), d_in.get(), d_weight.get(), true).ok());
  const std::vector<uint8_t> dy = output_gradient_->ToHost(), dy_t = output_gradient_t_->ToHost();
  // The same scale (no backward pass ended between them): the same fp8 bytes, transposed alike.
  const absl::Status status = linears_->RowBackwardSequenceParallel(
      site, d_out.get(), d_in_gathered.get(), d_weight_gathered.get(), true);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(output_gradient_->ToHost(), dy);
  EXPECT_EQ(output_gradient_t_->ToHost(), dy_t);
  EXPECT_LT(RelativeError(ToDouble(d_in_gathered.ToHost()), ToDouble(d_in.ToHost())), 1e-6);
  EXPECT_LT(RelativeError(ToDouble(d_weight_gathered.ToHost()), ToDouble(d_weight.ToHost())), 1e-6);
}

TEST_P(Fp8LinearTest, ColumnParallelQkv) { CheckLinear(Fp8Linear::kQkv); }

INSTANTIATE_TEST_SUITE_P(SequenceParallelAndFp8Parameters, Fp8LinearTest,
                         ::testing::Combine(::testing::Bool(), ::testing::Bool()));

// Initialize leaves the scaling state written for work on the rank's own stream, a
// non-blocking one as the probe's: a copy from pageable memory on the legacy default stream
// could still be landing when the first cast reads the scales. A long history makes the copy
// long enough for such a race to show.
TEST(Fp8LinearInitializeTest, ScalingStateIsWrittenOnTheRanksStream) {
  ASSERT_GE(ComputeCapability(), 90) << "the probe's fp8 training needs compute capability 9.0";
  const ShardShapes shapes = SmallFp8Shapes(false);
  StageLayers layers;
  layers.chunk_layers = {64, 64};
  const DelayedScalingRecipe recipe{1024, 0};
  const Fp8StateLayout layout = LayoutFp8State(shapes, layers, recipe, false);
  DeviceArray<uint8_t> scaling(layout.scaling_bytes);
  // DeviceArray poisons its bytes on the legacy default stream: settled before the test.
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  PhaseTimer timer(stream);
  Fp8LinearBuffers buffers;
  buffers.scaling_state = reinterpret_cast<char*>(scaling.get());
  Fp8Linears linears(shapes, layout, {0, 64}, buffers, nullptr, nullptr, nullptr, recipe, stream,
                     &timer);
  const absl::Status status = linears.Initialize();
  ASSERT_TRUE(status.ok()) << status;
  // Read back on the same stream, waiting for nothing else.
  float* host = nullptr;
  ASSERT_EQ(cudaMallocHost(&host, layout.scaling_bytes), cudaSuccess);
  ASSERT_EQ(
      cudaMemcpyAsync(host, scaling.get(), layout.scaling_bytes, cudaMemcpyDeviceToHost, stream),
      cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  for (const std::vector<Fp8ScalingGroup>* groups : {&layout.forward, &layout.backward}) {
    for (const Fp8ScalingGroup& group : *groups) {
      for (int64_t t = 0; t < group.tensors; ++t) {
        ASSERT_EQ(host[group.scale / 4 + t], 1.0f) << t;
        ASSERT_EQ(host[group.ScaleInverse(t) / 4], 1.0f) << t;
      }
      for (int64_t i = 0; i < layout.history_length * group.tensors; ++i) {
        ASSERT_EQ(host[group.amax_history / 4 + i], 0.0f) << i;
      }
    }
  }
  cudaFreeHost(host);
  cudaStreamDestroy(stream);
}

}  // namespace
}  // namespace paratune
