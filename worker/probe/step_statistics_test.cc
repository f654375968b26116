#include "worker/probe/step_statistics.h"

#include "gtest/gtest.h"

namespace paratune {
namespace {

TEST(StepStatisticsTest, OddCount) {
  const StepStatistics stats = ComputeStepStatistics({3.0, 1.0, 2.0});
  EXPECT_DOUBLE_EQ(stats.mean, 2.0);
  EXPECT_DOUBLE_EQ(stats.median, 2.0);
  EXPECT_DOUBLE_EQ(stats.min, 1.0);
  EXPECT_DOUBLE_EQ(stats.max, 3.0);
  // Sample standard deviation 1, mean 2.
  EXPECT_DOUBLE_EQ(stats.cv, 0.5);
}

TEST(StepStatisticsTest, EvenCountMedianIsTheMiddleMean) {
  const StepStatistics stats = ComputeStepStatistics({4.0, 1.0, 2.0, 3.0});
  EXPECT_DOUBLE_EQ(stats.median, 2.5);
  EXPECT_DOUBLE_EQ(stats.mean, 2.5);
}

TEST(StepStatisticsTest, OneStepHasNoVariation) {
  const StepStatistics stats = ComputeStepStatistics({0.7});
  EXPECT_DOUBLE_EQ(stats.mean, 0.7);
  EXPECT_DOUBLE_EQ(stats.median, 0.7);
  EXPECT_DOUBLE_EQ(stats.cv, 0.0);
}

}  // namespace
}  // namespace paratune
