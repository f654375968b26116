#include "worker/sim_backend.h"

#include <memory>
#include <set>

#include "absl/synchronization/notification.h"
#include "estimator/memory_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "worker/backend_conformance.h"
#include "worker/probe_specs.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;

std::unique_ptr<ProbeBackend> FastSim() {
  SimBackend::Options options;
  options.probe_time = absl::Milliseconds(20);
  return std::make_unique<SimBackend>(options);
}

INSTANTIATE_TEST_SUITE_P(Sim, BackendConformanceTest,
                         ::testing::Values(BackendConformanceParam{"sim", FastSim,
                                                                   SmallConformanceAssignment()}),
                         BackendConformanceParamName);

TEST(SimBackendTest, ResultsAreLabelledSimulated) {
  SoloProbeContext context;
  absl::StatusOr<v1::ProbeResult> result = FastSim()->Run(SmallConformanceAssignment(), context);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->simulated());
  EXPECT_EQ(result->backend(), "sim");
  EXPECT_THAT(result->message(), HasSubstr("simulated"));
  EXPECT_TRUE(result->measured().empty());
  EXPECT_THAT(result->modelled(), ::testing::Contains("compute"));
  EXPECT_GT(result->peak_memory_bytes(), 0);
}

TEST(SimBackendTest, TheSeedChangesTheNoise) {
  SoloProbeContext context;
  v1::ProbeAssignment other_seed = SmallConformanceAssignment();
  other_seed.set_seed(8);
  absl::StatusOr<v1::ProbeResult> a = FastSim()->Run(SmallConformanceAssignment(), context);
  absl::StatusOr<v1::ProbeResult> b = FastSim()->Run(other_seed, context);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(a->step_times_seconds(0), b->step_times_seconds(0));
}

TEST(SimBackendTest, OutOfMemoryReportsTheModelledPeakMemory) {
  v1::ProbeAssignment assignment = SmallConformanceAssignment();
  assignment.mutable_model()->set_preset("llama3.1-70b");
  SoloProbeContext context;
  absl::StatusOr<v1::ProbeResult> result = FastSim()->Run(assignment, context);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->outcome(), v1::PROBE_OUT_OF_MEMORY);
  EXPECT_GT(result->peak_memory_bytes(), 80LL * 1000 * 1000 * 1000);
  EXPECT_THAT(result->message(), HasSubstr("x the sim's factor for this configuration"));
  EXPECT_TRUE(result->step_times_seconds().empty());
  EXPECT_EQ(result->startup_seconds(), 30);  // it ran out of memory right after start-up
}

TEST(SimBackendTest, TruePeakMemoryVariesAroundTheEstimatePerConfiguration) {
  // With a wide spread, some seeds put the same configuration above capacity: a RISKY
  // configuration may not fit, as on a real cluster.
  SimBackend::Options options;
  options.probe_time = absl::ZeroDuration();
  options.memory_noise_sigma = 1.0;
  SimBackend sim(options);
  SoloProbeContext context;
  int ok = 0, out_of_memory = 0;
  std::set<int64_t> peaks;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    v1::ProbeAssignment assignment = SmallConformanceAssignment();
    assignment.set_seed(seed);
    absl::StatusOr<v1::ProbeResult> result = sim.Run(assignment, context);
    ASSERT_TRUE(result.ok()) << result.status();
    peaks.insert(result->peak_memory_bytes());
    if (result->outcome() == v1::PROBE_OK) {
      ++ok;
    } else {
      EXPECT_EQ(result->outcome(), v1::PROBE_OUT_OF_MEMORY);
      ++out_of_memory;
    }
  }
  EXPECT_GT(ok, 0);
  EXPECT_GT(out_of_memory, 0);
  EXPECT_EQ(peaks.size(), 40u);

  // Without a spread the true peak is the estimate, for every seed.
  options.memory_noise_sigma = 0;
  SimBackend exact(options);
  v1::ProbeAssignment other = SmallConformanceAssignment();
  other.set_seed(2);
  EXPECT_EQ(exact.Run(SmallConformanceAssignment(), context)->peak_memory_bytes(),
            exact.Run(other, context)->peak_memory_bytes());
}

TEST(SimBackendTest, Fp8RunsTheEstimatorsFp8Terms) {
  // The sim's true peak without noise is the memory model's, fp8 terms included
  // (fp8_weight_copies, fp8_scaling_state, fp8-saved linear inputs), so what the sim measures
  // of an fp8 run is what the estimator predicts, not a bf16 run's figure.
  SimBackend::Options options;
  options.probe_time = absl::ZeroDuration();
  options.memory_noise_sigma = 0;
  SimBackend sim(options);
  SoloProbeContext context;
  const auto peak_bytes = [&](const v1::ProbeAssignment& assignment) {
    absl::StatusOr<ProbeSpecs> specs = ResolveProbeSpecs(assignment);
    EXPECT_TRUE(specs.ok()) << specs.status();
    const double estimate = EstimateMemory(specs->model, specs->training, specs->cluster,
                                           specs->config, MemoryOptions())
                                .peak_bytes;
    absl::StatusOr<v1::ProbeResult> result = sim.Run(assignment, context);
    EXPECT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->peak_memory_bytes(), static_cast<int64_t>(estimate));
    return result->peak_memory_bytes();
  };
  v1::ProbeAssignment fp8 = SmallConformanceAssignment();
  fp8.mutable_training()->set_precision(v1::FP8);
  v1::ProbeAssignment fp8_weights = fp8;
  fp8_weights.mutable_training()->set_fp8_param_gather(true);
  const int64_t bf16_peak = peak_bytes(SmallConformanceAssignment());
  const int64_t fp8_peak = peak_bytes(fp8);
  EXPECT_NE(fp8_peak, bf16_peak);
  EXPECT_LT(peak_bytes(fp8_weights), fp8_peak);  // no bf16 copy of the linear weights
}

TEST(SimBackendTest, TimedStepsOutOfRangeNameTheField) {
  v1::ProbeAssignment assignment = SmallConformanceAssignment();
  assignment.set_timed_steps(0);
  SoloProbeContext context;
  absl::StatusOr<v1::ProbeResult> result = FastSim()->Run(assignment, context);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(result.status().message(), HasSubstr("assignment.timed_steps (0)"));
}

// Llama-3.2-1B with a global batch of 1024 on dp 8: 128 micro-batches, short steps of 2 and 4.
v1::ProbeAssignment LongStepAssignment() {
  v1::ProbeAssignment assignment = SmallConformanceAssignment();
  assignment.mutable_training()->set_global_batch_size(1024);
  assignment.set_deadline_seconds(600);
  return assignment;
}

TEST(SimBackendTest, ShortStepsExtrapolateTheFullStep) {
  v1::ProbeAssignment full_steps = LongStepAssignment();
  v1::ProbeAssignment short_steps = LongStepAssignment();
  short_steps.add_micro_batch_counts(2);
  short_steps.add_micro_batch_counts(4);
  SoloProbeContext context;
  absl::StatusOr<v1::ProbeResult> full = FastSim()->Run(full_steps, context);
  absl::StatusOr<v1::ProbeResult> extrapolated = FastSim()->Run(short_steps, context);
  ASSERT_TRUE(full.ok() && extrapolated.ok());
  EXPECT_TRUE(full->short_steps().empty());
  EXPECT_TRUE(full->extrapolated().empty());
  ASSERT_EQ(extrapolated->short_steps_size(), 2);
  EXPECT_EQ(extrapolated->short_steps(1).micro_batches(), 4);
  EXPECT_EQ(extrapolated->short_steps(1).step_times_seconds_size(), 4);
  EXPECT_THAT(extrapolated->extrapolated(), ::testing::ElementsAre("full_step"));
  EXPECT_EQ(extrapolated->extrapolation().full_micro_batches(), 128);
  EXPECT_GT(extrapolated->extrapolation().slot_seconds(), 0);
  EXPECT_EQ(extrapolated->step_times_seconds_size(), 4);
  // The same configuration (and configuration noise), different per-step noise: within a
  // few percent of the full steps.
  EXPECT_NEAR(extrapolated->mean_step_time_seconds() / full->mean_step_time_seconds(), 1, 0.05);
  // Short steps are what makes it cheap: the modelled probe is far shorter.
  EXPECT_LT(extrapolated->wall_seconds() - 30, 0.2 * (full->wall_seconds() - 30));
  EXPECT_THAT(extrapolated->message(), HasSubstr("extrapolated from short steps of 2 and 4"));
}

TEST(SimBackendTest, WallSecondsAreTheModelledRealDuration) {
  SoloProbeContext context;
  absl::StatusOr<v1::ProbeResult> result = FastSim()->Run(LongStepAssignment(), context);
  ASSERT_TRUE(result.ok()) << result.status();
  double steps = 0;
  for (double t : result->step_times_seconds()) steps += t;
  // 30 s start-up, 1 warm-up step and the 4 timed ones.
  EXPECT_GT(result->wall_seconds(), 30 + steps);
  EXPECT_LT(result->wall_seconds(), 30 + steps * 1.5);
  EXPECT_EQ(result->startup_seconds(), 30);
  EXPECT_THAT(result->modelled(), ::testing::Contains("wall_time"));
}

TEST(SimBackendTest, AProbeLongerThanItsDeadlineTimesOut) {
  v1::ProbeAssignment assignment = LongStepAssignment();
  assignment.set_deadline_seconds(31);
  SimBackend::Options options;
  options.time_scale = 0.001;
  SoloProbeContext context;
  const absl::Time start = absl::Now();
  absl::StatusOr<v1::ProbeResult> result = SimBackend(options).Run(assignment, context);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->outcome(), v1::PROBE_TIMEOUT);
  EXPECT_THAT(result->message(), HasSubstr("over its deadline of 31 s"));
  EXPECT_EQ(result->wall_seconds(), 31);
  // It slept the scaled deadline, 31 ms.
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(31));
}

}  // namespace
}  // namespace paratune
