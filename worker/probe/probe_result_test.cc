#include "worker/probe/probe_result.h"

#include "estimator/performance_model.h"
#include "estimator/performance_parameters.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "worker/probe/test_assignments.h"

namespace paratune {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

ProbeMeasurement Measured() {
  ProbeMeasurement m;
  m.step_seconds = {2.0, 2.2, 1.8};
  for (int p = 0; p < static_cast<int>(ProbePhase::kCount); ++p) m.phase_seconds[p] = 0.1 * p;
  CollectiveMeasurement tp;
  tp.group = RankGroup::kTensor;
  tp.operation = CollectiveOperation::kAllGather;
  tp.ranks = 2;
  tp.bytes = 1'000'000'000;
  tp.seconds = 0.004;
  m.collectives.push_back(tp);
  m.peak_memory_bytes = 40LL << 30;
  m.peak_memory_stage = 0;
  m.device.gpu_name = "NVIDIA H100 80GB HBM3";
  m.device.nccl_version = "2.28.9";
  m.attention_kernel = "chunked";
  m.attention_fallback_reason = "cuDNN has no engine for the attention graph";
  m.attention_backward_kernel = "cudnn_fused";
  return m;
}

TEST(ProbeResultTest, FullProbeReportsThroughputInTheEstimatorsConvention) {
  const v1::ProbeAssignment assignment = TestAssignment("llama3.1-8b", 16, 4096, 2, 2, 2, 1, 1);
  const ProbeSpec spec = *ProbeSpec::FromAssignment(assignment);
  const v1::ProbeResult result = ResultFromMeasurement(spec, Measured());
  EXPECT_EQ(result.outcome(), v1::PROBE_OK);
  EXPECT_EQ(result.backend(), "cuda");
  EXPECT_FALSE(result.simulated());
  ASSERT_EQ(result.step_times_seconds_size(), 3);
  EXPECT_DOUBLE_EQ(result.mean_step_time_seconds(), 2.0);
  EXPECT_DOUBLE_EQ(result.tokens_per_second(), 16.0 * 4096 / 2.0);
  const double flops = ModelFlopsPerStep(spec.model(), spec.training());
  EXPECT_DOUBLE_EQ(result.model_tflops_per_gpu(), flops / (2.0 * 8) / 1e12);
  EXPECT_EQ(result.peak_memory_bytes(), 40LL << 30);
  EXPECT_THAT(result.measured(), Contains("tp_collectives"));
  EXPECT_THAT(result.measured(), Contains("pp_send_recv"));
  EXPECT_THAT(result.measured(), Contains("dp_collectives"));
  EXPECT_THAT(result.measured(), Not(Contains("cp_collectives")));
  EXPECT_TRUE(result.modelled().empty());
  EXPECT_THAT(result.message(), HasSubstr("NVIDIA H100 80GB HBM3"));

  const v1::ProbeMeasurements& m = result.measurements();
  EXPECT_DOUBLE_EQ(m.median_step_time_seconds(), 2.0);
  EXPECT_DOUBLE_EQ(m.min_step_time_seconds(), 1.8);
  EXPECT_DOUBLE_EQ(m.max_step_time_seconds(), 2.2);
  EXPECT_NEAR(m.step_time_cv(), 0.1, 1e-12);
  ASSERT_EQ(m.phases_size(), static_cast<int>(ProbePhase::kCount));
  EXPECT_EQ(m.phases(0).phase(), "gemm");
  EXPECT_DOUBLE_EQ(m.phases(3).seconds(), 0.3);
  ASSERT_EQ(m.collectives_size(), 1);
  EXPECT_EQ(m.collectives(0).group(), "tp");
  EXPECT_EQ(m.collectives(0).operation(), "all_gather");
  EXPECT_DOUBLE_EQ(m.collectives(0).algorithm_bandwidth_gbps(), 250.0);
  EXPECT_DOUBLE_EQ(m.collectives(0).bus_bandwidth_gbps(), 125.0);
  EXPECT_GT(m.estimated_peak_memory_bytes(), 0);
  EXPECT_GE(m.memory_terms_size(), 12);
  EXPECT_EQ(m.memory_terms(0).term(), "weights");
  EXPECT_GT(m.predicted_step_time_seconds(), 0);
  EXPECT_EQ(m.modelled_dp_seconds_per_step(), 0);
  EXPECT_EQ(m.micro_batches_per_step(), 8);
  EXPECT_EQ(m.nccl_version(), "2.28.9");
  EXPECT_EQ(m.attention_kernel(), "chunked");
  EXPECT_EQ(m.attention_fallback_reason(), "cuDNN has no engine for the attention graph");
  EXPECT_EQ(m.attention_backward_kernel(), "cudnn_fused");
  EXPECT_EQ(m.attention_backward_fallback_reason(), "");
}

// Llama-3.1-8B, global batch 64 on dp 2: 32 micro-batches per step; short steps of 4 and 8.
ProbeSpec ShortStepSpec() {
  v1::ProbeAssignment assignment = TestAssignment("llama3.1-8b", 64, 4096, 2, 2, 2, 1, 1);
  assignment.add_micro_batch_counts(4);
  assignment.add_micro_batch_counts(8);
  return *ProbeSpec::FromAssignment(assignment);
}

TEST(ProbeResultTest, ShortStepsAreKeptAndTheFullStepExtrapolated) {
  const ProbeSpec spec = ShortStepSpec();
  ProbeMeasurement m = Measured();
  // T(m) = 1 + 0.5 m: 3 s at 4 micro-batches, 5 s at 8; 17 s at the full step's 32.
  m.step_seconds = {3.0, 3.0, 3.0, 5.0, 5.0, 5.0};
  const v1::ProbeResult result = ResultFromMeasurement(spec, m);
  ASSERT_EQ(result.outcome(), v1::PROBE_OK) << result.message();
  ASSERT_EQ(result.short_steps_size(), 2);
  EXPECT_EQ(result.short_steps(0).micro_batches(), 4);
  EXPECT_EQ(result.short_steps(1).step_times_seconds(2), 5.0);
  ASSERT_EQ(result.step_times_seconds_size(), 3);
  EXPECT_NEAR(result.mean_step_time_seconds(), 17.0, 1e-9);
  EXPECT_EQ(result.extrapolation().full_micro_batches(), 32);
  EXPECT_NEAR(result.extrapolation().slot_seconds(), 0.5, 1e-12);
  // pp 2: one slot of fill and drain, the rest of the intercept fixed.
  EXPECT_NEAR(result.extrapolation().fill_drain_seconds(), 0.5, 1e-12);
  EXPECT_NEAR(result.extrapolation().fixed_seconds(), 0.5, 1e-12);
  EXPECT_THAT(result.extrapolated(), Contains("full_step"));
  EXPECT_THAT(result.message(),
              HasSubstr("full step of 32 micro-batches extrapolated from short steps of 4 and 8"));
}

TEST(ProbeResultTest, ShortStepsThatDoNotGrowAreAnInfrastructureError) {
  ProbeMeasurement m = Measured();
  m.step_seconds = {5.0, 5.0, 5.0, 3.0, 3.0, 3.0};
  const v1::ProbeResult result = ResultFromMeasurement(ShortStepSpec(), m);
  EXPECT_EQ(result.outcome(), v1::PROBE_INFRA_ERROR);
  EXPECT_THAT(result.message(), HasSubstr("did not grow with their micro-batches"));
}

TEST(ProbeResultTest, ReplicaProbeAddsTheModelledDataParallelTime) {
  v1::ProbeAssignment assignment = TestAssignment("llama3.1-8b", 32, 4096, 4, 2, 1, 1, 1);
  assignment.set_scope(v1::PROBE_SCOPE_REPLICA);
  assignment.set_num_ranks(2);
  assignment.mutable_gang(0)->set_num_ranks(2);
  assignment.mutable_gpu_indices()->Truncate(2);
  const ProbeSpec spec = *ProbeSpec::FromAssignment(assignment);
  ASSERT_TRUE(DataParallelModelled(spec));
  const double dp_seconds =
      PredictPerformance(spec.model(), spec.training(), spec.cluster(), spec.config(),
                         DefaultPerformanceParameters(spec.cluster().gpu()))
          .dp_communication_seconds;
  ASSERT_GT(dp_seconds, 0);

  const v1::ProbeResult result = ResultFromMeasurement(spec, Measured());
  EXPECT_DOUBLE_EQ(result.step_times_seconds(0), 2.0 + dp_seconds);
  EXPECT_DOUBLE_EQ(result.mean_step_time_seconds(), 2.0 + dp_seconds);
  EXPECT_DOUBLE_EQ(result.measurements().modelled_dp_seconds_per_step(), dp_seconds);
  EXPECT_THAT(result.modelled(), Contains("dp_collectives"));
  EXPECT_THAT(result.measured(), Not(Contains("dp_collectives")));
  EXPECT_THAT(result.message(), HasSubstr("one of 4 data-parallel replicas ran"));
  // Throughput counts the whole configuration: 8 GPUs' worth of FLOPs.
  EXPECT_DOUBLE_EQ(result.model_tflops_per_gpu(), ModelFlopsPerStep(spec.model(), spec.training()) /
                                                      ((2.0 + dp_seconds) * 8) / 1e12);
}

TEST(ProbeResultTest, BusBandwidthFactorsFollowNcclTests) {
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(CollectiveOperation::kAllGather, 4), 0.75);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(CollectiveOperation::kReduceScatter, 8), 0.875);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(CollectiveOperation::kAllReduce, 2), 1.0);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(CollectiveOperation::kSendRecv, 2), 1.0);
}

TEST(ProbeResultTest, ErrorsMapToOutcomes) {
  EXPECT_EQ(OutcomeForError(absl::ResourceExhaustedError("cudaMalloc")), v1::PROBE_OUT_OF_MEMORY);
  EXPECT_EQ(OutcomeForError(absl::UnavailableError("no CUDA device")), v1::PROBE_INFRA_ERROR);
  EXPECT_EQ(OutcomeForError(absl::FailedPreconditionError("GPU 3 absent")), v1::PROBE_INFRA_ERROR);
  EXPECT_EQ(OutcomeForError(absl::InternalError("illegal address")), v1::PROBE_CRASH);
  const v1::ProbeResult result =
      ResultFromError(absl::ResourceExhaustedError("weights: cudaMalloc of 9 GiB failed"));
  EXPECT_EQ(result.outcome(), v1::PROBE_OUT_OF_MEMORY);
  EXPECT_EQ(result.backend(), "cuda");
  EXPECT_EQ(result.message(), "weights: cudaMalloc of 9 GiB failed");
}

}  // namespace
}  // namespace paratune
