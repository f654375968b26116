#include "worker/backend_conformance.h"

#include <cmath>
#include <numeric>
#include <thread>

#include "absl/status/status.h"
#include "absl/synchronization/notification.h"
#include "convert/spec_convert.h"
#include "estimator/performance_model.h"

namespace paratune {
namespace {

// A run that cannot be OK: either the backend rejects it or the result says it failed.
void ExpectNotOk(const absl::StatusOr<v1::ProbeResult>& outcome) {
  if (outcome.ok()) {
    EXPECT_NE(outcome->outcome(), v1::PROBE_OK) << outcome->DebugString();
    EXPECT_NE(outcome->outcome(), v1::PROBE_OUTCOME_UNSPECIFIED);
  }
}

TEST_P(BackendConformanceTest, ValidAssignmentRunsEveryTimedStep) {
  std::unique_ptr<ProbeBackend> backend = GetParam().make_backend();
  const v1::ProbeAssignment& assignment = GetParam().runnable;
  SoloProbeContext context;
  absl::StatusOr<v1::ProbeResult> outcome = backend->Run(assignment, context);
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  const v1::ProbeResult& result = *outcome;
  ASSERT_EQ(result.outcome(), v1::PROBE_OK) << result.message();
  EXPECT_EQ(result.backend(), backend->Name());
  ASSERT_EQ(result.step_times_seconds_size(), assignment.timed_steps());
  for (double t : result.step_times_seconds()) EXPECT_GT(t, 0);
  const double mean =
      std::accumulate(result.step_times_seconds().begin(), result.step_times_seconds().end(), 0.0) /
      result.step_times_seconds_size();
  EXPECT_NEAR(result.mean_step_time_seconds(), mean, 1e-9 * mean);
  const double tokens = static_cast<double>(assignment.training().global_batch_size()) *
                        static_cast<double>(assignment.training().seq_len());
  EXPECT_NEAR(result.tokens_per_second(), tokens / mean, 1e-6 * tokens / mean);
  // TFLOP/s per GPU follows the model-FLOPs convention of DESIGN.md §5.3 over every GPU of
  // the configuration.
  absl::StatusOr<ModelSpec> model = ModelSpecFromProto(assignment.model());
  absl::StatusOr<TrainingSpec> training = TrainingSpecFromProto(assignment.training());
  ASSERT_TRUE(model.ok() && training.ok());
  const v1::ParallelConfig& config = assignment.config();
  const double gpus = static_cast<double>(config.data_parallel() * config.tensor_parallel() *
                                          config.pipeline_parallel() * config.context_parallel());
  const double tflops = ModelFlopsPerStep(*model, *training) / (mean * gpus) / 1e12;
  EXPECT_NEAR(result.model_tflops_per_gpu(), tflops, 1e-3 * tflops);
  EXPECT_GE(result.peak_memory_bytes(), 0);
  EXPECT_GE(result.wall_seconds(), 0);
  EXPECT_FALSE(result.measured().empty() && result.modelled().empty())
      << "a result says what was measured and what was modelled";
  if (result.simulated()) {
    EXPECT_TRUE(result.measured().empty()) << "a simulation measures nothing";
  }
  EXPECT_FALSE(result.message().empty()) << "a result says where its numbers come from";
}

TEST_P(BackendConformanceTest, ImpossibleConfigurationsNeverSucceed) {
  std::unique_ptr<ProbeBackend> backend = GetParam().make_backend();
  SoloProbeContext context;

  v1::ProbeAssignment tp3 = GetParam().runnable;
  tp3.mutable_config()->set_tensor_parallel(3);
  ExpectNotOk(backend->Run(tp3, context));

  v1::ProbeAssignment wrong_world = GetParam().runnable;
  wrong_world.mutable_config()->set_data_parallel(wrong_world.config().data_parallel() * 2);
  ExpectNotOk(backend->Run(wrong_world, context));

  ExpectNotOk(backend->Run(v1::ProbeAssignment(), context));
}

TEST_P(BackendConformanceTest, ConfigurationTooLargeForMemoryIsOutOfMemory) {
  std::unique_ptr<ProbeBackend> backend = GetParam().make_backend();
  // Llama-3.1-70B unsharded on one 40 GB GPU per replica cannot fit.
  v1::ProbeAssignment assignment = GetParam().runnable;
  assignment.mutable_model()->Clear();
  assignment.mutable_model()->set_preset("llama3.1-70b");
  assignment.mutable_cluster()->mutable_gpu()->Clear();
  assignment.mutable_cluster()->mutable_gpu()->set_type("a100-40gb");
  SoloProbeContext context;
  absl::StatusOr<v1::ProbeResult> outcome = backend->Run(assignment, context);
  ExpectNotOk(outcome);
  if (outcome.ok()) {
    EXPECT_EQ(outcome->outcome(), v1::PROBE_OUT_OF_MEMORY);
    EXPECT_FALSE(outcome->message().empty()) << "a failed probe says why";
  }
}

TEST_P(BackendConformanceTest, CancelledBeforeStartReturnsCancelled) {
  std::unique_ptr<ProbeBackend> backend = GetParam().make_backend();
  SoloProbeContext context;
  context.Cancel();
  absl::StatusOr<v1::ProbeResult> outcome = backend->Run(GetParam().runnable, context);
  EXPECT_EQ(outcome.status().code(), absl::StatusCode::kCancelled) << outcome.status();
}

TEST_P(BackendConformanceTest, CancelledWhileRunningReturns) {
  std::unique_ptr<ProbeBackend> backend = GetParam().make_backend();
  SoloProbeContext context;
  absl::Notification started;
  absl::StatusOr<v1::ProbeResult> outcome;
  std::thread runner([&] {
    started.Notify();
    outcome = backend->Run(GetParam().runnable, context);
  });
  started.WaitForNotification();
  context.Cancel();
  // The probe either finished before the cancellation or stopped because of it; a backend
  // that ignores it makes this join hang and the test time out.
  runner.join();
  if (!outcome.ok()) {
    EXPECT_EQ(outcome.status().code(), absl::StatusCode::kCancelled) << outcome.status();
  }
}

TEST_P(BackendConformanceTest, DeterministicBackendsRepeatThemselves) {
  std::unique_ptr<ProbeBackend> backend = GetParam().make_backend();
  if (!backend->Deterministic()) GTEST_SKIP() << backend->Name() << " is not deterministic";
  SoloProbeContext context;
  absl::StatusOr<v1::ProbeResult> first = backend->Run(GetParam().runnable, context);
  absl::StatusOr<v1::ProbeResult> second = backend->Run(GetParam().runnable, context);
  ASSERT_TRUE(first.ok() && second.ok());
  ASSERT_EQ(first->step_times_seconds_size(), second->step_times_seconds_size());
  for (int i = 0; i < first->step_times_seconds_size(); ++i) {
    EXPECT_EQ(first->step_times_seconds(i), second->step_times_seconds(i)) << "step " << i;
  }
  EXPECT_EQ(first->model_tflops_per_gpu(), second->model_tflops_per_gpu());
}

}  // namespace

v1::ProbeAssignment SmallConformanceAssignment() {
  v1::ProbeAssignment assignment;
  assignment.set_name("searches/1/candidates/0/probes/1");
  assignment.set_backend("conformance");
  assignment.mutable_model()->set_preset("llama3.2-1b");
  assignment.mutable_training()->set_global_batch_size(64);
  assignment.mutable_training()->set_seq_len(2048);
  assignment.mutable_cluster()->mutable_gpu()->set_type("h100-80gb");
  assignment.mutable_cluster()->set_num_nodes(1);
  assignment.mutable_cluster()->set_gpus_per_node(8);
  v1::ParallelConfig& config = *assignment.mutable_config();
  config.set_data_parallel(8);
  config.set_tensor_parallel(1);
  config.set_pipeline_parallel(1);
  config.set_context_parallel(1);
  config.set_micro_batch_size(1);
  assignment.set_scope(v1::PROBE_SCOPE_FULL);
  assignment.set_warmup_steps(1);
  assignment.set_timed_steps(4);
  assignment.set_deadline_seconds(60);
  assignment.set_seed(7);
  return assignment;
}

std::string BackendConformanceParamName(
    const ::testing::TestParamInfo<BackendConformanceParam>& info) {
  return info.param.name;
}

}  // namespace paratune
