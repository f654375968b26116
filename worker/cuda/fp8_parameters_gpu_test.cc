// Fp8Parameters on the GPU (fp8_parameters.h): the fp8 weights quantized from their initial
// bf16 values, and the optimizer's casts of master shards that cut weights in two, against
// the CPU's conversion of the same values with the same scales; the amaxes the casts record,
// their maximum over a (one-rank) data x context group, and the scale inverses the forward
// pass reads. Needs compute capability 9.0 (H100), as the probe's fp8 training does.
#include <cuda_fp8.h>
#include <nccl.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "worker/cuda/fp8_parameters.h"
#include "worker/cuda/fp8_test_util.h"
#include "worker/cuda/gpu_test_util.h"
#include "worker/cuda/phase_timer.h"
#include "worker/probe/fp8_scaling.h"
#include "worker/probe/fp8_state_layout.h"
#include "worker/probe/fp8_weight_ranges.h"
#include "worker/probe/parameter_layout.h"

namespace paratune {
namespace {

using bf16 = __nv_bfloat16;

constexpr int kWeight = static_cast<int>(Fp8ForwardTensor::kWeight);
// Two optimizer shards of the whole buffer, whose boundary cuts a weight in two (the test
// checks that it does); the one rank here casts both.
constexpr int64_t kShards = 2;

class Fp8ParametersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_GE(ComputeCapability(), 90) << "the probe's fp8 training needs compute capability 9.0";
    int device = 0;
    ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
    shapes_ = SmallFp8Shapes(/*sequence_parallel=*/false);
    StageLayers layers;
    layers.chunk_layers = {1};
    parameters_ = LayoutParameters(shapes_, layers, false, kShards, /*fp8_parameters=*/true);
    state_ = LayoutFp8State(shapes_, layers, kExportedFp8Recipe, /*fp8_parameters=*/true);
    weights_ = std::make_unique<DeviceArray<uint8_t>>(parameters_.weight_bytes);
    copies_ = std::make_unique<DeviceArray<uint8_t>>(state_.weight_bytes);
    scaling_ = std::make_unique<DeviceArray<uint8_t>>(state_.scaling_bytes);
    ASSERT_EQ(cudaMemset(scaling_->get(), 0, state_.scaling_bytes), cudaSuccess);
    ASSERT_EQ(ncclCommInitAll(&comm_, 1, &device), ncclSuccess);
    ranges_ = Fp8WeightRangesIn(parameters_, shapes_, 0, parameters_.padded_elements);
    ASSERT_EQ(ranges_.size(), static_cast<size_t>(kFp8LinearsPerLayer));
  }
  void TearDown() override {
    if (comm_ != nullptr) ncclCommDestroy(comm_);
  }

  // Fp8Parameters over `shards` whose master values are in `master`.
  Fp8Parameters Make(ncclComm_t data_context, const std::vector<OptimizerShard>& shards,
                     const float* master) {
    Fp8ParameterBuffers buffers;
    buffers.weights = reinterpret_cast<char*>(weights_->get());
    buffers.weight_copies = reinterpret_cast<char*>(copies_->get());
    buffers.scaling_state = reinterpret_cast<char*>(scaling_->get());
    buffers.master_weights = master;
    return Fp8Parameters(shapes_, parameters_, state_, shards, buffers, data_context, nullptr,
                         &timer_);
  }

  // Sets the forward group's scale of each linear's weight (and its inverse beside it, as
  // UpdateFp8Scales keeps them), and clears the amaxes.
  void SetWeightScales(const std::vector<float>& scales) {
    std::vector<uint8_t> bytes = scaling_->ToHost();
    const Fp8ScalingGroup& group = state_.forward[0];
    std::memset(bytes.data() + group.amax_history, 0, group.tensors * sizeof(float));
    for (int l = 0; l < kFp8LinearsPerLayer; ++l) {
      const int64_t index = group.Index(0, static_cast<Fp8Linear>(l), kWeight);
      const float inverse = 1.0f / scales[l];
      std::memcpy(bytes.data() + group.scale + 4 * index, &scales[l], 4);
      std::memcpy(bytes.data() + group.ScaleInverse(index), &inverse, 4);
    }
    ASSERT_EQ(cudaMemcpy(scaling_->get(), bytes.data(), bytes.size(), cudaMemcpyHostToDevice),
              cudaSuccess);
  }
  float WeightAmax(Fp8Linear linear) const {
    const Fp8ScalingGroup& group = state_.forward[0];
    return FloatAt(*scaling_, group.amax_history + 4 * group.Index(0, linear, kWeight));
  }
  float CopyScaleInverse(Fp8Linear linear) const {
    return FloatAt(*copies_, state_.weights[0][static_cast<int>(linear)].scale_inverse);
  }

  // Every weight's bytes against `value(element)` cast with its linear's scale, and its amax.
  template <typename Value>
  void ExpectWeights(Value value, const std::vector<float>& scales) {
    const std::vector<uint8_t> bytes = weights_->ToHost();
    for (const Fp8WeightRange& range : ranges_) {
      const int l = static_cast<int>(range.linear);
      const int64_t base = parameters_.WeightByte(range.start);
      float amax = 0;
      for (int64_t i = 0; i < range.count; ++i) {
        const float v = value(range.start + i);
        amax = std::max(amax, std::fabs(v));
        ASSERT_EQ(bytes[base + i], QuantizeToFp8(v, scales[l], Fp8Format::kE4M3))
            << "linear " << l << " at " << i;
      }
      EXPECT_EQ(WeightAmax(range.linear), amax) << "linear " << l;
    }
  }

  ShardShapes shapes_;
  ParameterLayout parameters_;
  Fp8StateLayout state_;
  std::vector<Fp8WeightRange> ranges_;
  std::unique_ptr<DeviceArray<uint8_t>> weights_, copies_, scaling_;
  ncclComm_t comm_ = nullptr;
  PhaseTimer timer_{nullptr};
};

TEST_F(Fp8ParametersTest, InitialWeightsAreQuantizedWithTheInitialScale) {
  const std::vector<bf16> initial = RandomBf16(parameters_.padded_elements, 21, 0.02f);
  DeviceArray<bf16> device_initial(initial);
  const std::vector<float> ones(kFp8LinearsPerLayer, 1.0f);
  SetWeightScales(ones);
  Fp8Parameters fp8 = Make(nullptr, {}, nullptr);
  ASSERT_TRUE(fp8.Initialize(device_initial.get()).ok());
  ExpectWeights([&](int64_t e) { return __bfloat162float(initial[e]); }, ones);
  for (int l = 0; l < kFp8LinearsPerLayer; ++l) {
    EXPECT_EQ(CopyScaleInverse(static_cast<Fp8Linear>(l)), 1.0f);
  }
}

TEST_F(Fp8ParametersTest, MasterShardsAreCastThroughBf16WithEachWeightsScale) {
  // Masters whose fp32 values differ from their bf16 rounding: the cast must round to bf16
  // before it scales, as Transformer Engine's does.
  std::vector<float> master(parameters_.padded_elements);
  for (size_t i = 0; i < master.size(); ++i) {
    master[i] = (static_cast<float>(i % 977) - 488.0f) * 4.1e-5f + 1.3e-9f;
  }
  DeviceArray<float> device_master(master);
  const std::vector<float> scales = {9000.0f, 12000.0f, 20000.0f, 640.0f};
  // Both ranks' shards, their master values side by side in one buffer.
  const int64_t shard = parameters_.padded_elements / kShards;
  std::vector<OptimizerShard> shards;
  int64_t cut = 0;
  for (int64_t r = 0; r < kShards; ++r) {
    shards.push_back({r * shard, shard, r * shard});
    for (const Fp8WeightRange& range :
         Fp8WeightRangesIn(parameters_, shapes_, r * shard, (r + 1) * shard)) {
      if (range.count != LinearShapeOf(shapes_, range.linear).WeightElements()) ++cut;
    }
  }
  EXPECT_GT(cut, 0) << "no weight is split between the shards";
  for (ncclComm_t data_context : {static_cast<ncclComm_t>(nullptr), comm_}) {
    SetWeightScales(scales);
    Fp8Parameters fp8 = Make(data_context, shards, device_master.get());
    ASSERT_TRUE(fp8.CastMasterWeights().ok());
    ExpectWeights([&](int64_t e) { return __bfloat162float(__float2bfloat16(master[e])); }, scales);
    for (int l = 0; l < kFp8LinearsPerLayer; ++l) {
      EXPECT_FLOAT_EQ(CopyScaleInverse(static_cast<Fp8Linear>(l)), 1.0f / scales[l]);
    }
  }
}

}  // namespace
}  // namespace paratune
