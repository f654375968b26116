#include "server/core/candidate_selection.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

PlannedConfig Planned(MemoryVerdict verdict) {
  PlannedConfig planned{ParallelConfig::FromCheckedDims(ParallelDims()), MemoryEstimate(),
                        PerformanceEstimate()};
  planned.memory.verdict = verdict;
  return planned;
}

// Predicted order: SAFE, RISKY, SAFE, SAFE, RISKY.
Plan FivePlanned() {
  Plan plan;
  for (MemoryVerdict verdict : {MemoryVerdict::kSafe, MemoryVerdict::kRisky, MemoryVerdict::kSafe,
                                MemoryVerdict::kSafe, MemoryVerdict::kRisky}) {
    plan.candidates.push_back(Planned(verdict));
  }
  return plan;
}

v1::SearchSpec Spec(v1::SearchPolicy policy, int64_t top_k, bool include_risky) {
  v1::SearchSpec spec;
  spec.set_policy(policy);
  spec.set_top_k(top_k);
  spec.mutable_space()->set_memory_policy(include_risky ? v1::MEASURE_RISKY : v1::SAFE_ONLY);
  return spec;
}

TEST(SelectCandidatesTest, TopKTakesTheBestPredictedSafeOnes) {
  EXPECT_THAT(SelectCandidates(Spec(v1::TOP_K, 2, false), FivePlanned()), ElementsAre(0, 2));
  EXPECT_THAT(SelectCandidates(Spec(v1::TOP_K, 2, true), FivePlanned()), ElementsAre(0, 1));
  EXPECT_THAT(SelectCandidates(Spec(v1::TOP_K, 100, false), FivePlanned()), ElementsAre(0, 2, 3));
}

TEST(SelectCandidatesTest, ExhaustiveTakesEverySafeOneAndRiskyOnlyWhenAsked) {
  EXPECT_THAT(SelectCandidates(Spec(v1::EXHAUSTIVE, 0, false), FivePlanned()),
              ElementsAre(0, 2, 3));
  EXPECT_THAT(SelectCandidates(Spec(v1::EXHAUSTIVE, 0, true), FivePlanned()),
              ElementsAre(0, 1, 2, 3, 4));
}

TEST(SelectCandidatesTest, NothingToSelect) {
  EXPECT_THAT(SelectCandidates(Spec(v1::TOP_K, 8, false), Plan()), IsEmpty());
  EXPECT_THAT(SelectCandidates(Spec(v1::ADAPTIVE, 8, false), FivePlanned()), IsEmpty());
}

}  // namespace
}  // namespace paratune
