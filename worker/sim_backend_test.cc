#include "worker/sim_backend.h"

#include <memory>
#include <set>

#include "common/clock.h"
#include "estimator/memory_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "worker/backend_conformance.h"
#include "worker/probe/probe_spec.h"
#include "worker/probe_pipeline.h"

namespace paratune {
namespace {

using ::testing::AllOf;
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

// The result the worker makes of `sim`'s run of `assignment`.
v1::ProbeResult ResultOf(ProbeBackend& sim, const v1::ProbeAssignment& assignment) {
  SoloProbeContext context;
  return RunProbe(sim, assignment, context, *RealClock());
}

v1::ProbeResult RunFast(const v1::ProbeAssignment& assignment) {
  return ResultOf(*FastSim(), assignment);
}

TEST(SimBackendTest, ResultsAreLabelledSimulated) {
  const v1::ProbeResult result = RunFast(SmallConformanceAssignment());
  EXPECT_TRUE(result.simulated());
  EXPECT_EQ(result.backend(), "sim");
  EXPECT_THAT(result.message(),
              HasSubstr("simulated: performance model with seeded noise (assignment seed 7): "
                        "mean step time "));
  EXPECT_TRUE(result.measured().empty());
  // dp 8: every phase but the tensor, context and pipeline collectives.
  EXPECT_THAT(result.modelled(),
              ::testing::ElementsAre("gemm", "attention", "elementwise", "dp_collectives",
                                     "optimizer", "peak_memory", "wall_time"));
  EXPECT_GT(result.peak_memory_bytes(), 0);
}

TEST(SimBackendTest, TheSeedChangesTheNoise) {
  v1::ProbeAssignment other_seed = SmallConformanceAssignment();
  other_seed.set_seed(8);
  EXPECT_NE(RunFast(SmallConformanceAssignment()).step_times_seconds(0),
            RunFast(other_seed).step_times_seconds(0));
}

TEST(SimBackendTest, OutOfMemoryReportsTheModelledPeakMemory) {
  v1::ProbeAssignment assignment = SmallConformanceAssignment();
  assignment.mutable_model()->set_preset("llama3.1-70b");
  const v1::ProbeResult result = RunFast(assignment);
  EXPECT_EQ(result.outcome(), v1::PROBE_OUT_OF_MEMORY);
  EXPECT_GT(result.peak_memory_bytes(), 80LL * 1000 * 1000 * 1000);
  EXPECT_THAT(result.message(),
              AllOf(HasSubstr("simulated: the peak memory exceeds the GPU's 79.6 GiB"),
                    HasSubstr("x the sim's factor for this configuration")));
  EXPECT_TRUE(result.step_times_seconds().empty());
  EXPECT_THAT(result.modelled(), ::testing::ElementsAre("peak_memory", "wall_time"));
  EXPECT_EQ(result.startup_seconds(), 30);  // it ran out of memory right after start-up
  EXPECT_EQ(result.wall_seconds(), 30);
}

TEST(SimBackendTest, TruePeakMemoryVariesAroundTheEstimatePerConfiguration) {
  // With a wide spread, some seeds put the same configuration above capacity: a RISKY
  // configuration may not fit, as on a real cluster.
  SimBackend::Options options;
  options.probe_time = absl::ZeroDuration();
  options.memory_noise_sigma = 1.0;
  SimBackend sim(options);
  int ok = 0, out_of_memory = 0;
  std::set<int64_t> peaks;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    v1::ProbeAssignment assignment = SmallConformanceAssignment();
    assignment.set_seed(seed);
    const v1::ProbeResult result = ResultOf(sim, assignment);
    peaks.insert(result.peak_memory_bytes());
    if (result.outcome() == v1::PROBE_OK) {
      ++ok;
    } else {
      EXPECT_EQ(result.outcome(), v1::PROBE_OUT_OF_MEMORY);
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
  EXPECT_EQ(ResultOf(exact, SmallConformanceAssignment()).peak_memory_bytes(),
            ResultOf(exact, other).peak_memory_bytes());
}

TEST(SimBackendTest, Fp8RunsTheEstimatorsFp8Terms) {
  // The sim's true peak without noise is the memory model's, fp8 terms included
  // (fp8_weight_copies, fp8_scaling_state, fp8-saved linear inputs), so what the sim measures
  // of an fp8 run is what the estimator predicts, not a bf16 run's figure.
  SimBackend::Options options;
  options.probe_time = absl::ZeroDuration();
  options.memory_noise_sigma = 0;
  SimBackend sim(options);
  const auto peak_bytes = [&](const v1::ProbeAssignment& assignment) {
    absl::StatusOr<ProbeSpec> spec = ProbeSpec::FromAssignment(assignment);
    EXPECT_TRUE(spec.ok()) << spec.status();
    const double estimate = EstimateMemory(spec->model(), spec->training(), spec->cluster(),
                                           spec->config(), MemoryOptions())
                                .peak_bytes;
    const int64_t peak = ResultOf(sim, assignment).peak_memory_bytes();
    EXPECT_EQ(peak, static_cast<int64_t>(estimate));
    return peak;
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

// The worker checks the short-step counts of a sim probe as of any other (ProbeSpec).
TEST(SimBackendTest, ShortStepCountsAreChecked) {
  v1::ProbeAssignment assignment = SmallConformanceAssignment();
  assignment.add_micro_batch_counts(4);
  const v1::ProbeResult result = RunFast(assignment);
  EXPECT_EQ(result.outcome(), v1::PROBE_CRASH);
  EXPECT_THAT(result.message(),
              HasSubstr("INVALID_ARGUMENT: assignment.micro_batch_counts (4) must list no count "
                        "or at least two to extrapolate from"));
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
  const v1::ProbeResult full_result = RunFast(full_steps);
  const v1::ProbeResult extrapolated_result = RunFast(short_steps);
  const v1::ProbeResult* const full = &full_result;
  const v1::ProbeResult* const extrapolated = &extrapolated_result;
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
  EXPECT_THAT(extrapolated->message(),
              AllOf(HasSubstr("the full step of 128 micro-batches extrapolated from 4 timed steps "
                              "at each of 2 and 4 micro-batches per step"),
                    HasSubstr("; true full step ")));
}

TEST(SimBackendTest, WallSecondsAreTheModelledRealDuration) {
  const v1::ProbeResult result = RunFast(LongStepAssignment());
  double steps = 0;
  for (double t : result.step_times_seconds()) steps += t;
  // 30 s start-up, 1 warm-up step and the 4 timed ones.
  EXPECT_GT(result.wall_seconds(), 30 + steps);
  EXPECT_LT(result.wall_seconds(), 30 + steps * 1.5);
  EXPECT_EQ(result.startup_seconds(), 30);
  EXPECT_THAT(result.modelled(), ::testing::Contains("wall_time"));
  EXPECT_THAT(result.message(), HasSubstr("s) is modelled, not measured: 30 s start-up, 1 warm-up "
                                          "and 4 timed steps on real GPUs"));
}

TEST(SimBackendTest, AProbeLongerThanItsDeadlineTimesOut) {
  v1::ProbeAssignment assignment = LongStepAssignment();
  assignment.set_deadline_seconds(31);
  SimBackend::Options options;
  options.time_scale = 0.001;
  SimBackend sim(options);
  const v1::ProbeResult result = ResultOf(sim, assignment);
  EXPECT_EQ(result.outcome(), v1::PROBE_TIMEOUT);
  EXPECT_THAT(result.message(),
              AllOf(HasSubstr("simulated: performance model with seeded noise (assignment seed "
                              "7): it would take "),
                    HasSubstr(" s (30 s start-up, 1 warm-up and 4 timed steps on real GPUs), over "
                              "its deadline of 31 s, so it was stopped there")));
  EXPECT_EQ(result.wall_seconds(), 31);
  EXPECT_TRUE(result.step_times_seconds().empty());
}

}  // namespace
}  // namespace paratune
