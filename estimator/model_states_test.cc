#include "estimator/model_states.h"

#include <utility>

#include "gtest/gtest.h"

namespace paratune {
namespace {

TrainingSpec Training(Framework framework, bool fp32_gradients = true) {
  TrainingOptions options;
  options.global_batch_size = 8;
  options.seq_len = 4096;
  options.framework = framework;
  options.fp32_gradients = fp32_gradients;
  return *TrainingSpec::Create(options);
}

TEST(ShardedModelStatesTest, MegatronShardsOneMoreStatePerZeroStage) {
  const TrainingSpec megatron = Training(Framework::kMegatron);
  const double p = 1e9;
  const ModelStateBytes none = ShardedModelStates(megatron, DataParallelSharding::kNone, p, 2, 8);
  EXPECT_EQ(none.weights, 2 * p);
  EXPECT_EQ(none.gradients, 4 * p);
  EXPECT_EQ(none.optimizer_states, 12 * p);
  const ModelStateBytes zero1 =
      ShardedModelStates(megatron, DataParallelSharding::kOptimizer, p, 2, 8);
  EXPECT_EQ(zero1.Total(), (2 + 4 + 12.0 / 8) * p);
  const ModelStateBytes zero2 =
      ShardedModelStates(megatron, DataParallelSharding::kGradients, p, 2, 8);
  EXPECT_EQ(zero2.Total(), (2 + 16.0 / 8) * p);
  const ModelStateBytes zero3 = ShardedModelStates(megatron, DataParallelSharding::kFull, p, 2, 8);
  EXPECT_EQ(zero3.Total(), 18.0 / 8 * p);
  // fp8 model weights are 1 byte; bf16 gradients 2.
  EXPECT_EQ(ShardedModelStates(Training(Framework::kMegatron, false), DataParallelSharding::kNone,
                               p, 1, 8)
                .Total(),
            (1 + 2 + 12) * p);
}

TEST(ShardedModelStatesTest, TorchTitanKeepsFp32ParametersShardedInEveryFsdpMode) {
  const TrainingSpec titan = Training(Framework::kTorchTitan);
  const double p = 1e9;
  EXPECT_EQ(ShardedModelStates(titan, DataParallelSharding::kNone, p, 2, 8).Total(), 16 * p);
  for (DataParallelSharding mode :
       {DataParallelSharding::kGradients, DataParallelSharding::kFull}) {
    const ModelStateBytes states = ShardedModelStates(titan, mode, p, 2, 8);
    EXPECT_EQ(states.weights, 4 * p / 8);
    EXPECT_EQ(states.gradients, 4 * p / 8);
    EXPECT_EQ(states.optimizer_states, 8 * p / 8);
  }
}

TEST(GatheredWeightBytesTest, FullShardingHoldsTwoUnitsAndTorchTitansZeroTwoEveryUnit) {
  const TrainingSpec megatron = Training(Framework::kMegatron);
  const TrainingSpec titan = Training(Framework::kTorchTitan);
  const double stage = 1e9;
  const double unit = 1e8;
  const DataParallelSharding full = DataParallelSharding::kFull;
  const DataParallelSharding gradients = DataParallelSharding::kGradients;
  EXPECT_EQ(GatheredWeightBytes(megatron, full, false, stage, unit), 4 * unit);
  EXPECT_EQ(GatheredWeightBytes(megatron, full, true, stage, unit), 4 * unit);
  EXPECT_EQ(GatheredWeightBytes(titan, full, false, stage, unit), 4 * unit);
  // TorchTitan does not reshard after forward with pipeline parallelism.
  EXPECT_EQ(GatheredWeightBytes(titan, full, true, stage, unit), 2 * stage);
  EXPECT_EQ(GatheredWeightBytes(titan, gradients, false, stage, unit), 2 * stage);
  EXPECT_EQ(GatheredWeightBytes(megatron, gradients, false, stage, unit), 0);
  EXPECT_EQ(GatheredWeightBytes(megatron, DataParallelSharding::kOptimizer, false, stage, unit), 0);
  EXPECT_EQ(GatheredWeightBytes(titan, DataParallelSharding::kNone, true, stage, unit), 0);
}

TEST(AccumulatedGradientBytesTest, OnlyTorchTitansPipelinesAccumulateUnshardedGradients) {
  const TrainingSpec megatron = Training(Framework::kMegatron);
  const TrainingSpec titan = Training(Framework::kTorchTitan);
  const double stage = 1e9;
  // In FSDP's fp32 reduce dtype.
  EXPECT_EQ(AccumulatedGradientBytes(titan, DataParallelSharding::kFull, true, stage), 4 * stage);
  EXPECT_EQ(AccumulatedGradientBytes(titan, DataParallelSharding::kGradients, true, stage),
            4 * stage);
  EXPECT_EQ(AccumulatedGradientBytes(titan, DataParallelSharding::kFull, false, stage), 0);
  EXPECT_EQ(AccumulatedGradientBytes(titan, DataParallelSharding::kNone, true, stage), 0);
  EXPECT_EQ(AccumulatedGradientBytes(megatron, DataParallelSharding::kFull, true, stage), 0);
}

TEST(DataParallelTrafficPerStepTest, CountsGathersAndReductionsAsTheMemoryTermsHoldThem) {
  const TrainingSpec megatron = Training(Framework::kMegatron);
  const TrainingSpec titan = Training(Framework::kTorchTitan);
  const double m = 8;
  const auto traffic = [&](const TrainingSpec& training, DataParallelSharding sharding,
                           bool pipelined) {
    const DataParallelTraffic t = DataParallelTrafficPerStep(training, sharding, pipelined, m);
    return std::make_pair(t.weight_gathers, t.gradient_reductions);
  };
  using Counts = std::pair<double, double>;
  // DDP and the distributed optimizer: gradients accumulated in the buffers, synced once.
  EXPECT_EQ(traffic(megatron, DataParallelSharding::kNone, true), Counts(0, 1));
  EXPECT_EQ(traffic(megatron, DataParallelSharding::kOptimizer, false), Counts(1, 1));
  // Sharded gradients leave nothing to accumulate in: each micro-batch's are reduced.
  EXPECT_EQ(traffic(megatron, DataParallelSharding::kGradients, true), Counts(1, m));
  // Resharded after forward: gathered for the forward and again for the backward.
  EXPECT_EQ(traffic(megatron, DataParallelSharding::kFull, true), Counts(2 * m, m));
  EXPECT_EQ(traffic(titan, DataParallelSharding::kFull, false), Counts(2 * m, m));
  // TorchTitan's ZeRO-2 keeps the gathered weights to the backward.
  EXPECT_EQ(traffic(titan, DataParallelSharding::kGradients, false), Counts(m, m));
  // Its pipelines gather once and reduce the accumulated gradients at the last backward.
  EXPECT_EQ(traffic(titan, DataParallelSharding::kFull, true), Counts(1, 1));
  EXPECT_EQ(traffic(titan, DataParallelSharding::kGradients, true), Counts(1, 1));
  EXPECT_EQ(traffic(titan, DataParallelSharding::kNone, true), Counts(0, 1));
}

}  // namespace
}  // namespace paratune
