#include "tools/validation_stats.h"

#include <cmath>

#include "gtest/gtest.h"

namespace paratune {
namespace {

TEST(ValidationStatsTest, Mape) {
  EXPECT_DOUBLE_EQ(MeanAbsolutePercentageError({110, 90}, {100, 100}), 0.1);
  EXPECT_DOUBLE_EQ(MeanAbsolutePercentageError({}, {}), 0);
}

TEST(ValidationStatsTest, MedianPercentageErrorIgnoresOneFarOffRow) {
  EXPECT_DOUBLE_EQ(MedianAbsolutePercentageError({110, 80, 300}, {100, 100, 100}), 0.2);
  EXPECT_DOUBLE_EQ(MedianAbsolutePercentageError({110, 80, 300, 100}, {100, 100, 100, 100}), 0.15);
  EXPECT_DOUBLE_EQ(MedianAbsolutePercentageError({}, {}), 0);
}

TEST(ValidationStatsTest, RanksShareTies) {
  EXPECT_EQ(AverageRanks({10, 30, 20, 20}), (std::vector<double>{1, 4, 2.5, 2.5}));
}

TEST(ValidationStatsTest, Spearman) {
  EXPECT_DOUBLE_EQ(SpearmanCorrelation({1, 2, 3}, {10, 20, 30}), 1);
  EXPECT_DOUBLE_EQ(SpearmanCorrelation({1, 2, 3}, {30, 20, 10}), -1);
  // Ranks of y: 1, 3, 2, 4; d = (0, -1, 1, 0): 1 - 6 x 2 / (4 x 15) = 0.8.
  EXPECT_NEAR(SpearmanCorrelation({1, 2, 3, 4}, {1, 4, 1.5, 5}), 0.8, 1e-12);
  EXPECT_DOUBLE_EQ(SpearmanCorrelation({1, 2}, {5, 5}), 0);
}

TEST(ValidationStatsTest, Regret) {
  EXPECT_DOUBLE_EQ(PredictedBestRegret({3, 2, 1}, {90, 100, 50}), 0.1);
  EXPECT_DOUBLE_EQ(PredictedBestRegret({1, 2, 3}, {90, 100, 150}), 0);
}

TEST(ValidationStatsTest, PooledStandardDeviation) {
  // Squares about the means 2 and 10: 2 + 8 over 2 + 1 degrees of freedom; the lone 7 adds none.
  EXPECT_DOUBLE_EQ(PooledStandardDeviation({{1, 2, 3}, {8, 12}, {7}}), std::sqrt(10.0 / 3));
  EXPECT_DOUBLE_EQ(PooledStandardDeviation({{5}, {}}), 0);
}

}  // namespace
}  // namespace paratune
