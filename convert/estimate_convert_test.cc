#include "convert/estimate_convert.h"

#include <string>

#include "gtest/gtest.h"

namespace paratune {
namespace {

class EstimateConvertTest : public ::testing::Test {
 protected:
  EstimateConvertTest()
      : model_(*FindModelPreset("llama3.1-8b")),
        training_(*TrainingSpec::Create({1024, 8192})),
        cluster_(*ClusterSpec::Create(*FindGpuPreset("h100-80gb"), 2, 8)) {}

  ParallelConfig Config(int64_t dp, int64_t tp, int64_t pp) const {
    ParallelDims dims;
    dims.dp = dp;
    dims.tp = tp;
    dims.pp = pp;
    dims.sequence_parallel = tp > 1;
    return *ParallelConfig::Create(model_, training_, cluster_, {}, dims);
  }

  ModelSpec model_;
  TrainingSpec training_;
  ClusterSpec cluster_;
};

TEST_F(EstimateConvertTest, SingleStage) {
  const ParallelConfig config = Config(8, 2, 1);
  const MemoryEstimate estimate =
      EstimateMemory(model_, training_, cluster_, config, MemoryOptions());
  const v1::MemoryEstimate proto = MemoryEstimateToProto(estimate, config, 0.8);
  ASSERT_EQ(proto.stages_size(), 1);
  const v1::StageMemory& stage = proto.stages(0);
  EXPECT_EQ(stage.stage(), 0);
  ASSERT_EQ(stage.terms_size(), static_cast<int>(MemoryTerm::kCount));
  int64_t sum = 0;
  for (int i = 0; i < stage.terms_size(); ++i) {
    EXPECT_EQ(stage.terms(i).name(), MemoryTermName(static_cast<MemoryTerm>(i)));
    EXPECT_NEAR(stage.terms(i).bytes(), estimate.first_stage.bytes[i], 0.5);
    sum += stage.terms(i).bytes();
  }
  EXPECT_EQ(stage.total_bytes(), sum);
  EXPECT_EQ(proto.peak_stage_index(), 0);
  EXPECT_EQ(proto.peak_bytes(), sum);
  EXPECT_EQ(proto.capacity_bytes(), 81559LL * 1024 * 1024);
  EXPECT_DOUBLE_EQ(proto.fraction_of_capacity(), estimate.fraction_of_capacity);
  EXPECT_DOUBLE_EQ(proto.safe_threshold(), 0.8);
  EXPECT_EQ(proto.verdict(), v1::SAFE);
}

TEST_F(EstimateConvertTest, FirstAndLastStagesAndPeakIndex) {
  // Llama-3.2-1B with one micro-batch per step: the last stage is the peak.
  const ModelSpec model = *FindModelPreset("llama3.2-1b");
  const TrainingSpec training = *TrainingSpec::Create({8, 8192});
  ParallelDims dims;
  dims.dp = 8;
  dims.pp = 2;
  const ParallelConfig config = *ParallelConfig::Create(model, training, cluster_, {}, dims);
  const MemoryEstimate estimate =
      EstimateMemory(model, training, cluster_, config, MemoryOptions());
  ASSERT_TRUE(estimate.peak_is_last_stage);
  const v1::MemoryEstimate proto = MemoryEstimateToProto(estimate, config, 0.8);
  ASSERT_EQ(proto.stages_size(), 2);
  EXPECT_EQ(proto.stages(0).stage(), 0);
  EXPECT_EQ(proto.stages(1).stage(), 1);
  EXPECT_EQ(proto.peak_stage_index(), 1);
  EXPECT_EQ(proto.peak_bytes(), proto.stages(1).total_bytes());
  EXPECT_EQ(proto.stages(0).terms_size(), proto.stages(1).terms_size());
}

TEST_F(EstimateConvertTest, Verdicts) {
  const ParallelConfig config = Config(8, 2, 1);
  MemoryEstimate estimate = EstimateMemory(model_, training_, cluster_, config, MemoryOptions());
  estimate.verdict = MemoryVerdict::kRisky;
  EXPECT_EQ(MemoryEstimateToProto(estimate, config, 0.8).verdict(), v1::RISKY);
  estimate.verdict = MemoryVerdict::kOutOfMemory;
  EXPECT_EQ(MemoryEstimateToProto(estimate, config, 0.8).verdict(), v1::OUT_OF_MEMORY);
}

TEST_F(EstimateConvertTest, PerformanceFields) {
  const PerformanceEstimate estimate = PredictPerformance(
      model_, training_, cluster_, Config(2, 2, 4), DefaultPerformanceParameters(cluster_.gpu()));
  const v1::PerformanceEstimate proto = PerformanceEstimateToProto(estimate);
  EXPECT_EQ(proto.step_time_seconds(), estimate.step_time_seconds);
  EXPECT_EQ(proto.compute_seconds(), estimate.compute_seconds);
  EXPECT_EQ(proto.pipeline_bubble_seconds(), estimate.pipeline_bubble_seconds);
  EXPECT_EQ(proto.tp_communication_seconds(), estimate.tp_communication_seconds);
  EXPECT_EQ(proto.cp_communication_seconds(), estimate.cp_communication_seconds);
  EXPECT_EQ(proto.dp_communication_seconds(), estimate.dp_communication_seconds);
  EXPECT_EQ(proto.pp_communication_seconds(), estimate.pp_communication_seconds);
  EXPECT_EQ(proto.optimizer_seconds(), estimate.optimizer_seconds);
  EXPECT_EQ(proto.tokens_per_second(), estimate.tokens_per_second);
  EXPECT_EQ(proto.model_tflops_per_gpu(), estimate.model_tflops_per_gpu);
  EXPECT_EQ(proto.mfu(), estimate.mfu);
  EXPECT_EQ(proto.model_flops_per_step(), estimate.model_flops_per_step);
  EXPECT_EQ(proto.relative_error(), estimate.relative_error);
  EXPECT_GT(proto.relative_error(), 0);
  EXPECT_GT(proto.pipeline_bubble_seconds(), 0);
  EXPECT_EQ(proto.mfu_peak_tflops(), estimate.mfu_peak_tflops);
  EXPECT_EQ(proto.mfu_peak_tflops(), cluster_.gpu().peak_bf16_tflops);
  EXPECT_EQ(proto.mfu_peak_precision(), "bf16");
}

TEST_F(EstimateConvertTest, Fp8MfuIsAgainstTheFp8Peak) {
  TrainingOptions options = training_.options();
  options.fp8 = true;
  const TrainingSpec fp8 = *TrainingSpec::Create(options);
  const PerformanceEstimate estimate = PredictPerformance(
      model_, fp8, cluster_, Config(2, 2, 4), DefaultPerformanceParameters(cluster_.gpu()));
  const v1::PerformanceEstimate proto = PerformanceEstimateToProto(estimate);
  EXPECT_EQ(proto.mfu_peak_precision(), "fp8");
  EXPECT_EQ(proto.mfu_peak_tflops(), 2 * cluster_.gpu().peak_bf16_tflops);
  EXPECT_DOUBLE_EQ(proto.mfu(), proto.model_tflops_per_gpu() / proto.mfu_peak_tflops());
}

TEST_F(EstimateConvertTest, PlanCountsCandidatesAndRejections) {
  PlanOptions options;
  options.memory.safe_fraction = 0.5;
  const Plan plan = *PlanConfigurations(model_, training_, cluster_, options,
                                        DefaultPerformanceParameters(cluster_.gpu()));
  ASSERT_GT(plan.candidates.size(), 3u);
  ASSERT_GT(plan.counts.risky, 0);
  v1::PlanResponse proto = PlanToProto(plan, options, 3);
  EXPECT_EQ(proto.counts().enumerated(), plan.counts.enumerated);
  EXPECT_EQ(proto.counts().valid(), plan.counts.valid);
  EXPECT_EQ(proto.counts().memory_safe(), plan.counts.safe);
  EXPECT_EQ(proto.counts().memory_risky(), plan.counts.risky);
  EXPECT_EQ(proto.counts().memory_out_of_memory(), plan.counts.out_of_memory);
  ASSERT_EQ(proto.candidates_size(), 3);
  for (int i = 0; i < 3; ++i) {
    const v1::Candidate& candidate = proto.candidates(i);
    EXPECT_TRUE(candidate.name().empty());
    EXPECT_EQ(candidate.state(), v1::CANDIDATE_PLANNED);
    EXPECT_EQ(candidate.config().tensor_parallel(), plan.candidates[i].config.tp());
    EXPECT_EQ(candidate.config().micro_batch_size(), plan.candidates[i].config.micro_batch());
    EXPECT_DOUBLE_EQ(candidate.memory().safe_threshold(), 0.5);
    EXPECT_EQ(candidate.predicted().model_tflops_per_gpu(),
              plan.candidates[i].predicted.model_tflops_per_gpu);
  }
  int64_t rejected = 0;
  for (const v1::RejectionCount& rejection : proto.rejections()) {
    EXPECT_GT(rejection.count(), 0);
    rejected += rejection.count();
    bool known = false;
    for (int r = 1; r < static_cast<int>(Rejection::kCount); ++r) {
      if (rejection.reason() == RejectionRule(static_cast<Rejection>(r))) {
        known = true;
        EXPECT_EQ(rejection.count(), plan.rejections[r]);
      }
    }
    EXPECT_TRUE(known) << rejection.reason();
  }
  EXPECT_EQ(rejected + plan.counts.valid, plan.counts.enumerated);

  EXPECT_EQ(PlanToProto(plan, options, 0).candidates_size(),
            static_cast<int>(plan.candidates.size()));
  EXPECT_EQ(PlanToProto(plan, options, 100000).candidates_size(),
            static_cast<int>(plan.candidates.size()));
  options.include_risky = true;
  EXPECT_EQ(PlanToProto(plan, options, 0).counts().memory_safe(),
            plan.counts.safe + plan.counts.risky);
}

}  // namespace
}  // namespace paratune
