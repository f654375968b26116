#include "worker/step_metrics.h"

#include "gtest/gtest.h"
#include "worker/probe_specs.h"

namespace paratune {
namespace {

// Llama-3.1-8B, global batch 1024 x 8192 tokens, on 8 H100-94GB as dp4 tp2.
v1::ProbeAssignment EightGpuAssignment() {
  v1::ProbeAssignment assignment;
  assignment.mutable_model()->set_preset("llama3.1-8b");
  assignment.mutable_training()->set_global_batch_size(1024);
  assignment.mutable_training()->set_seq_len(8192);
  assignment.mutable_cluster()->mutable_gpu()->set_type("h100-94gb");
  assignment.mutable_cluster()->set_num_nodes(2);
  assignment.mutable_cluster()->set_gpus_per_node(4);
  v1::ParallelConfig& config = *assignment.mutable_config();
  config.set_data_parallel(4);
  config.set_tensor_parallel(2);
  config.set_pipeline_parallel(1);
  config.set_context_parallel(1);
  config.set_micro_batch_size(1);
  assignment.set_timed_steps(2);
  return assignment;
}

TEST(StepMetricsTest, ThroughputFollowsTheMeanStepTime) {
  absl::StatusOr<ProbeSpecs> specs = ResolveProbeSpecs(EightGpuAssignment());
  ASSERT_TRUE(specs.ok()) << specs.status();
  v1::ProbeResult result;
  SetStepTimes(*specs, {10.0, 14.0}, result);
  ASSERT_EQ(result.step_times_seconds_size(), 2);
  EXPECT_DOUBLE_EQ(result.mean_step_time_seconds(), 12.0);
  EXPECT_DOUBLE_EQ(result.tokens_per_second(), 1024.0 * 8192.0 / 12.0);
  // DESIGN.md §5.3 for Llama-3.1-8B: F = GBS s [12 L h^2 (1 + k/a + s/h) + 18 L f h + 6 V h].
  const double h = 4096, f = 14336, layers = 32, vocab = 128256, s = 8192;
  const double flops =
      1024 * s *
      (12 * layers * h * h * (1 + 8.0 / 32 + s / h) + 18 * layers * f * h + 6 * vocab * h);
  EXPECT_NEAR(result.model_tflops_per_gpu(), flops / 12.0 / 8 / 1e12, 1e-9);
}

TEST(StepMetricsTest, SettingAgainReplacesTheStepTimes) {
  absl::StatusOr<ProbeSpecs> specs = ResolveProbeSpecs(EightGpuAssignment());
  ASSERT_TRUE(specs.ok()) << specs.status();
  v1::ProbeResult result;
  SetStepTimes(*specs, {1.0, 2.0, 3.0}, result);
  SetStepTimes(*specs, {5.0}, result);
  ASSERT_EQ(result.step_times_seconds_size(), 1);
  EXPECT_DOUBLE_EQ(result.mean_step_time_seconds(), 5.0);
}

TEST(ProbeSpecsTest, TimedStepsOutOfRangeNameTheField) {
  v1::ProbeAssignment assignment = EightGpuAssignment();
  assignment.set_timed_steps(10'001);
  EXPECT_EQ(ResolveProbeSpecs(assignment).status().message(),
            "assignment.timed_steps (10001) must be in [1, 10000]");
}

}  // namespace
}  // namespace paratune
