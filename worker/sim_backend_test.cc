#include "worker/sim_backend.h"

#include <memory>

#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "worker/backend_conformance.h"

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

TEST(SimBackendTest, OutOfMemoryReportsTheEstimateAsPeakMemory) {
  v1::ProbeAssignment assignment = SmallConformanceAssignment();
  assignment.mutable_model()->set_preset("llama3.1-70b");
  SoloProbeContext context;
  absl::StatusOr<v1::ProbeResult> result = FastSim()->Run(assignment, context);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->outcome(), v1::PROBE_OUT_OF_MEMORY);
  EXPECT_GT(result->peak_memory_bytes(), 80LL * 1000 * 1000 * 1000);
  EXPECT_THAT(result->message(), HasSubstr("the estimate, not a measurement"));
  EXPECT_TRUE(result->step_times_seconds().empty());
}

TEST(SimBackendTest, TimedStepsOutOfRangeNameTheField) {
  v1::ProbeAssignment assignment = SmallConformanceAssignment();
  assignment.set_timed_steps(0);
  SoloProbeContext context;
  absl::StatusOr<v1::ProbeResult> result = FastSim()->Run(assignment, context);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(result.status().message(), HasSubstr("assignment.timed_steps (0)"));
}

}  // namespace
}  // namespace paratune
