#include "estimator/short_probe.h"

#include <cmath>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// Llama-3.1-8B, s 8192, on 2 nodes of 8 H100s.
class ShortProbeTest : public ::testing::Test {
 protected:
  ShortProbeTest()
      : model_(*FindModelPreset("llama3.1-8b")),
        cluster_(*ClusterSpec::Create(*FindGpuPreset("h100-80gb"), 2, 8)) {}

  ParallelConfig Config(const ParallelDims& dims, const TrainingSpec& training) const {
    absl::StatusOr<ParallelConfig> config =
        ParallelConfig::Create(model_, training, cluster_, PlacementRules(), dims);
    EXPECT_TRUE(config.ok()) << config.status();
    return *config;
  }

  PerformanceEstimate Predict(const ParallelConfig& config, const TrainingSpec& training) const {
    return PredictPerformance(model_, training, cluster_, config,
                              DefaultPerformanceParameters(cluster_.gpu()));
  }

  ModelSpec model_;
  ClusterSpec cluster_;
};

TEST_F(ShortProbeTest, CountsAreTwoAndFourPipelineDepthsWhenShorterThanTheFullStep) {
  const TrainingSpec training = *TrainingSpec::Create({1024, 8192});
  const ShortProbePlan plan =
      PlanShortProbe(Config(MakeParallelDims(2, 2, 4, 1, 1), training), training);
  EXPECT_EQ(plan.full_micro_batches, 512);
  EXPECT_THAT(plan.micro_batch_counts, ElementsAre(8, 16));

  // 64 / (dp 16 x mbs 1) = 4 micro-batches, no more than 4 pp: full steps.
  const TrainingSpec small = *TrainingSpec::Create({64, 8192});
  const ShortProbePlan full =
      PlanShortProbe(Config(MakeParallelDims(16, 1, 1, 1, 1), small), small);
  EXPECT_EQ(full.full_micro_batches, 4);
  EXPECT_THAT(full.micro_batch_counts, IsEmpty());
}

// The performance model is what the sim measures: a step of m micro-batches predicted
// directly (a global batch of m x dp x mbs) equals the decomposition's value, for plain,
// interleaved and context-parallel configurations.
TEST_F(ShortProbeTest, PredictedShortStepsMatchTheModelAtTheSmallerBatch) {
  ParallelDims interleaved = MakeParallelDims(2, 2, 4, 1, 1);
  interleaved.virtual_pipeline = 2;
  for (const ParallelDims& dims :
       {MakeParallelDims(2, 2, 4, 1, 1), interleaved, MakeParallelDims(2, 2, 2, 2, 2),
        MakeParallelDims(16, 1, 1, 1, 1)}) {
    const TrainingSpec training = *TrainingSpec::Create({1024, 8192});
    const ParallelConfig config = Config(dims, training);
    const PerformanceEstimate full = Predict(config, training);
    const int64_t full_micro_batches = config.NumMicroBatches(training);
    for (int64_t m : {dims.pp * 2, dims.pp * 4, full_micro_batches}) {
      const TrainingSpec shorter = *TrainingSpec::Create({m * dims.dp * dims.micro_batch, 8192});
      EXPECT_NEAR(PredictedStepSeconds(full, full_micro_batches, m),
                  Predict(Config(dims, shorter), shorter).step_time_seconds, 1e-9)
          << config.ToString() << " m " << m;
    }
  }
}

TEST_F(ShortProbeTest, ExtrapolationRecoversTheModelsFullStep) {
  const TrainingSpec training = *TrainingSpec::Create({1024, 8192});
  const ParallelConfig config = Config(MakeParallelDims(2, 2, 4, 1, 1), training);
  const PerformanceEstimate full = Predict(config, training);
  const ShortProbePlan plan = PlanShortProbe(config, training);
  std::vector<ShortStepSeries> series;
  for (int64_t m : plan.micro_batch_counts) {
    const double t = PredictedStepSeconds(full, plan.full_micro_batches, m);
    series.push_back({m, {t, t, t}});
  }
  absl::StatusOr<StepExtrapolation> extrapolated =
      ExtrapolateFullStep(series, plan.full_micro_batches, 4, 1);
  ASSERT_TRUE(extrapolated.ok()) << extrapolated.status();
  EXPECT_NEAR(extrapolated->mean_full_step_seconds, full.step_time_seconds,
              1e-9 * full.step_time_seconds);
  ASSERT_EQ(extrapolated->full_step_seconds.size(), 3u);
  EXPECT_NEAR(extrapolated->fill_drain_seconds, full.pipeline_bubble_seconds,
              0.05 * full.pipeline_bubble_seconds);
  EXPECT_NEAR(extrapolated->fixed_seconds + extrapolated->fill_drain_seconds,
              full.pipeline_bubble_seconds + full.dp_communication_seconds + full.optimizer_seconds,
              1e-9 * full.step_time_seconds);
}

TEST_F(ShortProbeTest, ExtrapolationFitsTheLineAndKeepsEachStepsSpread) {
  // T(m) = 2 + 0.5 m, with one step 10% slow at m = 8.
  const std::vector<ShortStepSeries> series = {{8, {6.0, 6.6}}, {16, {10.0, 10.0}}};
  absl::StatusOr<StepExtrapolation> extrapolated = ExtrapolateFullStep(series, 64, 2, 1);
  ASSERT_TRUE(extrapolated.ok()) << extrapolated.status();
  EXPECT_DOUBLE_EQ(extrapolated->full_step_seconds[0], 34.0);
  // Slope (10 - 6.6) / 8 = 0.425, intercept 3.2: 30.4 at 64.
  EXPECT_NEAR(extrapolated->full_step_seconds[1], 30.4, 1e-9);
  EXPECT_NEAR(extrapolated->mean_full_step_seconds, 32.2, 1e-9);
  EXPECT_NEAR(extrapolated->slot_seconds, 0.4625, 1e-9);
  EXPECT_NEAR(extrapolated->fill_drain_seconds, 0.4625, 1e-9);
}

TEST_F(ShortProbeTest, BadSeriesNameTheField) {
  EXPECT_EQ(ExtrapolateFullStep({{8, {1.0}}}, 64, 2, 1).status().message(),
            "short_steps (1 series) must hold at least two micro-batch counts");
  EXPECT_EQ(ExtrapolateFullStep({{8, {1.0}}, {16, {1.0, 2.0}}}, 64, 2, 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ExtrapolateFullStep({{8, {1.0}}, {16, {0.0}}}, 64, 2, 1).status().message(),
            "short_steps[1].step_times_seconds[0] (0) must be > 0");
  EXPECT_EQ(ExtrapolateFullStep({{8, {1.0}}, {8, {2.0}}}, 64, 2, 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ExtrapolateFullStep({{8, {2.0}}, {16, {1.0}}}, 64, 2, 1).status().code(),
            absl::StatusCode::kOutOfRange);
}

TEST_F(ShortProbeTest, ProbeDurationCountsStartupWarmUpAndTimedSteps) {
  const TrainingSpec training = *TrainingSpec::Create({1024, 8192});
  const ParallelConfig config = Config(MakeParallelDims(2, 2, 4, 1, 1), training);
  const PerformanceEstimate full = Predict(config, training);
  const ShortProbePlan plan = PlanShortProbe(config, training);
  const double t8 = PredictedStepSeconds(full, 512, 8);
  const double t16 = PredictedStepSeconds(full, 512, 16);
  ProbeSteps steps;
  steps.warmup_steps = 1;
  steps.timed_steps = 3;
  steps.startup_seconds = 20;
  EXPECT_NEAR(PredictedProbeSeconds(full, plan, steps), 20 + t8 + 3 * (t8 + t16), 1e-9);
  ProbeSteps launches = steps;
  launches.launch_per_count = true;
  EXPECT_NEAR(PredictedProbeSeconds(full, plan, launches), 20 + 4 * t8 + 20 + 4 * t16, 1e-9);
  ProbeSteps full_steps = steps;
  full_steps.short_steps = false;
  EXPECT_NEAR(PredictedProbeSeconds(full, plan, full_steps), 20 + 4 * full.step_time_seconds, 1e-9);
  EXPECT_NEAR(PredictedProbeSeconds(full, ShortProbePlan{512, {}}, steps),
              20 + 4 * full.step_time_seconds, 1e-9);
  // Short steps are the point: the probe costs a small fraction of full steps.
  steps.startup_seconds = 0;
  EXPECT_LT(PredictedProbeSeconds(full, plan, steps), 0.2 * 4 * full.step_time_seconds);
}

TEST_F(ShortProbeTest, AProbeRunsShortStepsOnlyWhereTheyAreShorter) {
  const TrainingSpec training = *TrainingSpec::Create({1024, 8192});
  const ParallelConfig config = Config(MakeParallelDims(2, 2, 4, 1, 1), training);
  const PerformanceEstimate full = Predict(config, training);
  const ShortProbePlan plan = PlanShortProbe(config, training);
  ProbeSteps steps;
  EXPECT_THAT(PlanProbeSteps(plan, full, steps).micro_batch_counts, ElementsAre(8, 16));
  steps.launch_per_count = true;
  EXPECT_THAT(PlanProbeSteps(plan, full, steps).micro_batch_counts, ElementsAre(8, 16));
  // A second launch's start-up costs more than the full steps' extra micro-batches.
  steps.startup_seconds = 7 * full.step_time_seconds;
  EXPECT_THAT(PlanProbeSteps(plan, full, steps).micro_batch_counts, IsEmpty());
  steps = ProbeSteps();
  steps.short_steps = false;
  EXPECT_THAT(PlanProbeSteps(plan, full, steps).micro_batch_counts, IsEmpty());
  EXPECT_EQ(PlanProbeSteps(plan, full, steps).full_micro_batches, 512);
}

}  // namespace
}  // namespace paratune
