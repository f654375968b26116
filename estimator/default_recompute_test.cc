#include "estimator/default_recompute.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

using ::testing::ElementsAre;

absl::StatusOr<DefaultRecomputePlan> PlanOn(const char* model, int64_t nodes,
                                            const PlanOptions& options) {
  const ClusterSpec cluster = *ClusterSpec::Create(*FindGpuPreset("h100-80gb"), nodes, 8);
  return PlanWithDefaultRecompute(*FindModelPreset(model), *TrainingSpec::Create({1024, 8192}),
                                  cluster, options, DefaultPerformanceParameters(cluster.gpu()));
}

// RISKY candidates kept, as a search's default memory policy keeps them.
PlanOptions WithRisky() {
  PlanOptions options;
  options.include_risky = true;
  return options;
}

TEST(PlanWithDefaultRecomputeTest, AddsSelectiveAndFullWhenNothingFitsWithout) {
  absl::StatusOr<DefaultRecomputePlan> planned = PlanOn("llama3.1-70b", 2, WithRisky());
  ASSERT_TRUE(planned.ok()) << planned.status();
  EXPECT_TRUE(planned->recompute_added);
  EXPECT_THAT(planned->options.recompute_modes,
              ElementsAre(Recompute::kNone, Recompute::kSelective, Recompute::kFull));
  EXPECT_FALSE(planned->plan.candidates.empty());
  for (const PlannedConfig& candidate : planned->plan.candidates) {
    EXPECT_NE(candidate.config.recompute(), Recompute::kNone);
  }
}

TEST(PlanWithDefaultRecomputeTest, KeepsTheDefaultWhereSomethingFits) {
  absl::StatusOr<DefaultRecomputePlan> planned = PlanOn("llama3.1-8b", 2, WithRisky());
  ASSERT_TRUE(planned.ok()) << planned.status();
  EXPECT_FALSE(planned->recompute_added);
  EXPECT_TRUE(planned->options.recompute_modes.empty());
  EXPECT_FALSE(planned->plan.candidates.empty());
}

TEST(PlanWithDefaultRecomputeTest, KeepsModesTheRequestNamed) {
  PlanOptions options = WithRisky();
  options.recompute_modes = {Recompute::kNone};
  absl::StatusOr<DefaultRecomputePlan> planned = PlanOn("llama3.1-70b", 2, options);
  ASSERT_TRUE(planned.ok()) << planned.status();
  EXPECT_FALSE(planned->recompute_added);
  EXPECT_TRUE(planned->plan.candidates.empty());
}

}  // namespace
}  // namespace paratune
