#include "server/core/search_budget.h"

#include "gtest/gtest.h"

namespace paratune {
namespace {

TEST(BudgetReachedTest, ZeroLimitsAreUnlimited) {
  EXPECT_FALSE(BudgetReached(v1::SearchBudget(), {1'000'000, 1e12, absl::Hours(1e4)}).has_value());
}

TEST(BudgetReachedTest, NamesTheLimitReached) {
  v1::SearchBudget budget;
  budget.set_max_probes(20);
  budget.set_max_gpu_seconds(3600);
  budget.set_deadline_seconds(7200);
  EXPECT_FALSE(BudgetReached(budget, {19, 3599, absl::Seconds(7199)}).has_value());
  EXPECT_EQ(BudgetReached(budget, {20, 0, absl::ZeroDuration()}),
            "budget: max_probes (20) reached");
  EXPECT_EQ(BudgetReached(budget, {0, 3600.4, absl::ZeroDuration()}),
            "budget: max_gpu_seconds (3600) reached after 3600 GPU-seconds");
  EXPECT_EQ(BudgetReached(budget, {20, 3600, absl::Seconds(7200)}), "budget: deadline (2h) passed");
  EXPECT_TRUE(DeadlinePassed(budget, absl::Seconds(7200)));
  EXPECT_FALSE(DeadlinePassed(budget, absl::Seconds(7199)));
}

TEST(SearchAgeTest, CountsFromTheCreateTime) {
  v1::Search search;
  search.mutable_create_time()->set_seconds(1000);
  EXPECT_EQ(SearchAge(search, absl::FromUnixSeconds(1090)), absl::Seconds(90));
}

}  // namespace
}  // namespace paratune
