#include "worker/short_steps.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// pp 2, interleaved with vp 2 when asked.
ParallelConfig PipelineOfTwo(int64_t virtual_pipeline = 1) {
  ParallelDims dims = MakeParallelDims(4, 1, 2, 1, 1);
  dims.virtual_pipeline = virtual_pipeline;
  return ParallelConfig::FromCheckedDims(dims);
}

v1::ProbeAssignment WithCounts(std::initializer_list<int64_t> counts) {
  v1::ProbeAssignment assignment;
  for (int64_t count : counts) assignment.add_micro_batch_counts(count);
  return assignment;
}

TEST(ShortStepsTest, CountsAreNoneOrTwoOrMoreAscendingBelowTheFullStep) {
  EXPECT_TRUE(CheckMicroBatchCounts(WithCounts({}), PipelineOfTwo(), 16).ok());
  EXPECT_TRUE(CheckMicroBatchCounts(WithCounts({4, 8}), PipelineOfTwo(), 16).ok());
  EXPECT_TRUE(CheckMicroBatchCounts(WithCounts({3, 5, 7}), PipelineOfTwo(), 16).ok());
  const struct {
    v1::ProbeAssignment assignment;
    int64_t virtual_pipeline;
    const char* error;
  } cases[] = {
      {WithCounts({4}), 1, "assignment.micro_batch_counts (4) must list no count or at least two"},
      {WithCounts({0, 4}), 1, "assignment.micro_batch_counts[0] (0) must be in [1, 15]"},
      {WithCounts({8, 4}), 1, "assignment.micro_batch_counts[1] (4) must be in [9, 15]"},
      {WithCounts({4, 16}), 1, "assignment.micro_batch_counts[1] (16) must be in [5, 15]"},
      {WithCounts({4, 7}), 2,
       "assignment.micro_batch_counts[1] (7) must be a multiple of pipeline_parallel (2)"},
  };
  for (const auto& c : cases) {
    const absl::Status status =
        CheckMicroBatchCounts(c.assignment, PipelineOfTwo(c.virtual_pipeline), 16);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << c.error;
    EXPECT_THAT(status.message(), HasSubstr(c.error));
  }
}

TEST(ShortStepsTest, TheFullStepIsExtrapolatedAndTheShortStepsKept) {
  // T(m) = 0.1 + 0.01 m (+ 0.001 per step index), so the full step of 16 is 0.26 (+ ...).
  const std::vector<ShortStepSeries> series = {{4, {0.14, 0.141}}, {8, {0.18, 0.181}}};
  v1::ProbeResult result;
  absl::StatusOr<std::vector<double>> full =
      ExtrapolateShortSteps(series, 16, PipelineOfTwo(), result);
  ASSERT_TRUE(full.ok()) << full.status();
  EXPECT_THAT(*full, ElementsAre(DoubleNear(0.26, 1e-12), DoubleNear(0.261, 1e-12)));
  ASSERT_EQ(result.short_steps_size(), 2);
  EXPECT_EQ(result.short_steps(1).micro_batches(), 8);
  EXPECT_THAT(result.short_steps(1).step_times_seconds(), ElementsAre(0.18, 0.181));
  EXPECT_EQ(result.extrapolation().full_micro_batches(), 16);
  EXPECT_NEAR(result.extrapolation().slot_seconds(), 0.01, 1e-12);
  // pp 2: one slot of fill and drain; the rest of the intercept is fixed.
  EXPECT_NEAR(result.extrapolation().fill_drain_seconds(), 0.01, 1e-12);
  EXPECT_NEAR(result.extrapolation().fixed_seconds(), 0.0905, 1e-12);
  EXPECT_THAT(result.extrapolated(), ElementsAre("full_step"));
  EXPECT_EQ(result.outcome(), v1::PROBE_OUTCOME_UNSPECIFIED);  // the caller's to set
}

TEST(ShortStepsTest, StepsThatDoNotGrowAreNoExtrapolation) {
  const std::vector<ShortStepSeries> series = {{4, {0.2}}, {8, {0.1}}};
  v1::ProbeResult result;
  absl::StatusOr<std::vector<double>> full =
      ExtrapolateShortSteps(series, 16, PipelineOfTwo(), result);
  EXPECT_EQ(full.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_THAT(full.status().message(),
              HasSubstr("short steps did not grow with their micro-batches"));
  EXPECT_EQ(result.outcome(), v1::PROBE_OUTCOME_UNSPECIFIED);  // the caller's to set
  EXPECT_EQ(result.short_steps_size(), 2);  // what was measured, for whoever looks
  EXPECT_FALSE(result.has_extrapolation());
  EXPECT_TRUE(result.extrapolated().empty());
}

}  // namespace
}  // namespace paratune
