#include "worker/backend_conformance.h"

#include <cmath>
#include <numeric>
#include <thread>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "estimator/performance_model.h"
#include "gmock/gmock.h"
#include "worker/probe/probe_spec.h"
#include "worker/probe/test_assignments.h"
#include "worker/probe_pipeline.h"

namespace paratune {
namespace {

// The result the worker makes of `assignment` run by `backend`.
v1::ProbeResult RunThroughTheWorker(ProbeBackend& backend, const v1::ProbeAssignment& assignment) {
  SoloProbeContext context;
  return RunProbe(backend, assignment, context, *RealClock());
}

// A clock on which the deadline has always just passed: every timed wait ends at once.
class ExpiredClock : public Clock {
 public:
  absl::Time Now() override { return absl::UnixEpoch(); }
  void Sleep(absl::Duration) override {}
  bool WaitForNotification(const absl::Notification& notification, absl::Duration) override {
    return notification.HasBeenNotified();
  }
};

TEST_P(BackendConformanceTest, ValidAssignmentRunsEveryTimedStep) {
  std::unique_ptr<ProbeBackend> backend = GetParam().make_backend();
  const v1::ProbeAssignment& assignment = GetParam().runnable;
  const v1::ProbeResult result = RunThroughTheWorker(*backend, assignment);
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
  // the configuration, even when the probe ran fewer.
  const ProbeSpec spec = SpecOf(assignment);
  const ParallelConfig& config = spec.config();
  const double gpus = static_cast<double>(config.dp() * config.tp() * config.pp() * config.cp());
  const double tflops = ModelFlopsPerStep(spec.model(), spec.training()) / (mean * gpus) / 1e12;
  EXPECT_NEAR(result.model_tflops_per_gpu(), tflops, 1e-3 * tflops);
  EXPECT_GE(result.peak_memory_bytes(), 0);
  EXPECT_GE(result.wall_seconds(), 0);
  EXPECT_FALSE(result.measured().empty() && result.modelled().empty())
      << "a result says what was measured and what was modelled";
  if (result.simulated()) {
    EXPECT_TRUE(result.measured().empty()) << "a simulation measures nothing";
    EXPECT_EQ(result.message().rfind("simulated: ", 0), 0u) << result.message();
  }
  EXPECT_FALSE(result.message().empty()) << "a result says where its numbers come from";
}

// The run itself, before the worker makes a result of it: every figure says where it comes
// from, and the steps are what the probe was to run.
TEST_P(BackendConformanceTest, TheRunSaysWhereEachFigureComesFrom) {
  std::unique_ptr<ProbeBackend> backend = GetParam().make_backend();
  const ProbeSpec spec = SpecOf(GetParam().runnable);
  SoloProbeContext context;
  absl::StatusOr<ProbeRun> run = backend->Run(spec, context);
  ASSERT_TRUE(run.ok()) << run.status();
  ASSERT_EQ(run->outcome, v1::PROBE_OK) << run->detail;
  ASSERT_FALSE(run->timed_steps.empty());
  for (const ShortStepSeries& series : run->timed_steps) {
    EXPECT_EQ(series.step_times_seconds.size(), static_cast<size_t>(spec.timed_steps()));
    for (double seconds : series.step_times_seconds) EXPECT_GT(seconds, 0);
  }
  EXPECT_NE(run->phases[static_cast<int>(ProbePhase::kGemm)], Provenance::kAbsent)
      << "every step runs GEMMs";
  if (run->source == FigureSource::kSimulated) {
    for (Provenance phase : run->phases) EXPECT_NE(phase, Provenance::kMeasured);
    EXPECT_NE(run->peak_memory, Provenance::kMeasured);
    EXPECT_NE(run->wall_time, Provenance::kMeasured);
  }
  if (run->wall_time == Provenance::kModelled) {
    EXPECT_GT(run->wall_seconds, 0);
  }
}

TEST_P(BackendConformanceTest, ShortStepsGiveTheFullStepsTheyStandFor) {
  std::unique_ptr<ProbeBackend> backend = GetParam().make_backend();
  v1::ProbeAssignment assignment = GetParam().runnable;
  assignment.add_micro_batch_counts(2);
  assignment.add_micro_batch_counts(4);
  const v1::ProbeResult result = RunThroughTheWorker(*backend, assignment);
  ASSERT_EQ(result.outcome(), v1::PROBE_OK) << result.message();
  EXPECT_EQ(result.step_times_seconds_size(), assignment.timed_steps());
  if (result.short_steps().empty()) {
    // A backend that has only full steps (replay) runs them.
    EXPECT_TRUE(result.extrapolated().empty());
  } else {
    EXPECT_EQ(result.short_steps_size(), 2);
    EXPECT_EQ(result.extrapolation().full_micro_batches(), 8);
    EXPECT_THAT(result.extrapolated(), ::testing::ElementsAre("full_step"))
        << "extrapolated figures say so";
  }
}

TEST_P(BackendConformanceTest, ImpossibleConfigurationsNeverSucceed) {
  std::unique_ptr<ProbeBackend> backend = GetParam().make_backend();
  v1::ProbeAssignment tp3 = GetParam().runnable;
  tp3.mutable_config()->set_tensor_parallel(3);
  v1::ProbeAssignment wrong_world = GetParam().runnable;
  wrong_world.mutable_config()->set_data_parallel(wrong_world.config().data_parallel() * 2);
  v1::ProbeAssignment empty;
  empty.set_backend(backend->Name());
  for (const v1::ProbeAssignment& assignment : {tp3, wrong_world, empty}) {
    const v1::ProbeResult result = RunThroughTheWorker(*backend, assignment);
    EXPECT_EQ(result.outcome(), v1::PROBE_CRASH) << result.message();
    EXPECT_THAT(result.message(), ::testing::HasSubstr("INVALID_ARGUMENT"));
  }
}

TEST_P(BackendConformanceTest, ConfigurationTooLargeForMemoryIsOutOfMemory) {
  std::unique_ptr<ProbeBackend> backend = GetParam().make_backend();
  // Llama-3.1-70B unsharded on one 40 GB GPU per replica cannot fit.
  v1::ProbeAssignment assignment = GetParam().runnable;
  assignment.mutable_model()->Clear();
  assignment.mutable_model()->set_preset("llama3.1-70b");
  assignment.mutable_cluster()->mutable_gpu()->Clear();
  assignment.mutable_cluster()->mutable_gpu()->set_type("a100-40gb");
  const v1::ProbeResult result = RunThroughTheWorker(*backend, assignment);
  EXPECT_EQ(result.outcome(), v1::PROBE_OUT_OF_MEMORY) << result.message();
  EXPECT_FALSE(result.message().empty()) << "a failed probe says why";
  EXPECT_TRUE(result.step_times_seconds().empty());
  // A probe that timed no step labels no phase.
  for (const std::string& part : result.measured()) EXPECT_EQ(part, "peak_memory");
  for (const std::string& part : result.modelled()) {
    EXPECT_THAT(part, ::testing::AnyOf("peak_memory", "wall_time"));
  }
}

TEST_P(BackendConformanceTest, StoppedBeforeStartReturnsCancelled) {
  std::unique_ptr<ProbeBackend> backend = GetParam().make_backend();
  SoloProbeContext context;
  context.Stop();
  absl::StatusOr<ProbeRun> run = backend->Run(SpecOf(GetParam().runnable), context);
  EXPECT_EQ(run.status().code(), absl::StatusCode::kCancelled) << run.status();
}

TEST_P(BackendConformanceTest, StoppedWhileRunningReturns) {
  std::unique_ptr<ProbeBackend> backend = GetParam().make_backend();
  const ProbeSpec spec = SpecOf(GetParam().runnable);
  SoloProbeContext context;
  absl::Notification started;
  absl::StatusOr<ProbeRun> run;
  std::thread runner([&] {
    started.Notify();
    run = backend->Run(spec, context);
  });
  started.WaitForNotification();
  context.Stop();
  // The probe either finished before it was told to stop or stopped because of it; a backend
  // that ignores it makes this join hang and the test time out.
  runner.join();
  if (!run.ok()) {
    EXPECT_EQ(run.status().code(), absl::StatusCode::kCancelled) << run.status();
  }
}

// The worker holds every backend to the deadline on its own clock: a probe still running there
// is told to stop, stops, and is reported as timed out.
TEST_P(BackendConformanceTest, TheDeadlineStopsAProbeStillRunning) {
  std::unique_ptr<ProbeBackend> backend = GetParam().make_backend();
  ExpiredClock clock;
  SoloProbeContext context;
  const v1::ProbeResult result = RunProbe(*backend, GetParam().runnable, context, clock);
  // A probe that finished before the worker looked at its clock is not stopped.
  if (result.outcome() != v1::PROBE_OK) {
    EXPECT_EQ(result.outcome(), v1::PROBE_TIMEOUT) << result.message();
    EXPECT_THAT(result.message(),
                ::testing::HasSubstr("did not finish within its deadline of 60 s"));
    EXPECT_TRUE(context.stop().HasBeenNotified());
  }
}

TEST_P(BackendConformanceTest, DeterministicBackendsRepeatThemselves) {
  std::unique_ptr<ProbeBackend> backend = GetParam().make_backend();
  if (!backend->Deterministic()) GTEST_SKIP() << backend->Name() << " is not deterministic";
  const v1::ProbeResult first = RunThroughTheWorker(*backend, GetParam().runnable);
  const v1::ProbeResult second = RunThroughTheWorker(*backend, GetParam().runnable);
  ASSERT_EQ(first.step_times_seconds_size(), second.step_times_seconds_size());
  for (int i = 0; i < first.step_times_seconds_size(); ++i) {
    EXPECT_EQ(first.step_times_seconds(i), second.step_times_seconds(i)) << "step " << i;
  }
  EXPECT_EQ(first.model_tflops_per_gpu(), second.model_tflops_per_gpu());
  EXPECT_EQ(first.message(), second.message());
}

}  // namespace

ProbeSpec SpecOf(const v1::ProbeAssignment& assignment) {
  absl::StatusOr<ProbeSpec> spec = ProbeSpec::FromAssignment(assignment);
  EXPECT_TRUE(spec.ok()) << spec.status();
  return *std::move(spec);
}

v1::ProbeAssignment SmallConformanceAssignment() {
  v1::ProbeAssignment assignment = TestAssignment("llama3.2-1b", 64, 2048, 8, 1, 1, 1, 1);
  assignment.set_backend("conformance");
  assignment.set_timed_steps(4);
  assignment.set_deadline_seconds(60);
  return assignment;
}

std::string BackendConformanceParamName(
    const ::testing::TestParamInfo<BackendConformanceParam>& info) {
  return info.param.name;
}

}  // namespace paratune
