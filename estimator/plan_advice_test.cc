#include "estimator/plan_advice.h"

#include <optional>
#include <vector>

#include "estimator/performance_parameters.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

using ::testing::ElementsAre;

// Llama-3.1-70B, s 8192, global batch 1024 on `nodes` nodes of 8 `gpu`, RISKY candidates kept
// (a search's default memory policy): with the default options (no recompute) nothing fits on
// 2 nodes of H100-80GB, the newcomer's case of docs/estimator.md.
class PlanAdviceTest : public ::testing::Test {
 protected:
  PlanAdviceTest() { options_.include_risky = true; }

  PlanRequestValues Request() const { return {model_, training_, cluster_, options_}; }

  int64_t Candidates(const TrainingSpec& training, const ClusterSpec& cluster,
                     const PlanOptions& options) const {
    absl::StatusOr<Plan> plan = PlanConfigurations(model_, training, cluster, options,
                                                   DefaultPerformanceParameters(cluster.gpu()));
    EXPECT_TRUE(plan.ok()) << plan.status();
    return plan.ok() ? static_cast<int64_t>(plan->candidates.size()) : -1;
  }

  ModelSpec model_ = *FindModelPreset("llama3.1-70b");
  TrainingSpec training_ = *TrainingSpec::Create({1024, 8192});
  ClusterSpec cluster_ = *ClusterSpec::Create(*FindGpuPreset("h100-80gb"), 2, 8);
  PlanOptions options_;
};

TEST_F(PlanAdviceTest, NothingFitsAsRequested) {
  EXPECT_EQ(Candidates(training_, cluster_, options_), 0);
}

TEST_F(PlanAdviceTest, RecomputeAddsSelectiveAndFull) {
  std::optional<PlanAdvice> advice = AdviseRecompute(Request());
  ASSERT_TRUE(advice.has_value());
  EXPECT_EQ(advice->kind, AdviceKind::kRecompute);
  EXPECT_THAT(advice->recompute_modes,
              ElementsAre(Recompute::kNone, Recompute::kSelective, Recompute::kFull));
  PlanOptions options = options_;
  options.recompute_modes = advice->recompute_modes;
  EXPECT_EQ(advice->candidates, Candidates(training_, cluster_, options));
  EXPECT_GT(advice->candidates, 0);
  // Nothing to add once every mode is searched.
  options_.recompute_modes = {Recompute::kFull, Recompute::kSelective};
  EXPECT_FALSE(AdviseRecompute(Request()).has_value());
}

TEST_F(PlanAdviceTest, NodesAreTheSmallestCountThatFits) {
  std::optional<PlanAdvice> advice = AdviseNodes(Request());
  ASSERT_TRUE(advice.has_value());
  EXPECT_EQ(advice->kind, AdviceKind::kNodes);
  EXPECT_EQ(advice->num_nodes, 4);
  EXPECT_EQ(Candidates(training_, *ClusterSpec::Create(cluster_.gpu(), 3, 8), options_), 0);
  EXPECT_EQ(advice->candidates,
            Candidates(training_, *ClusterSpec::Create(cluster_.gpu(), 4, 8), options_));
  EXPECT_EQ(advice->candidates, 3);
}

TEST_F(PlanAdviceTest, TheGpuTypeWithTheLeastMoreMemoryThatFits) {
  std::optional<PlanAdvice> advice = AdviseGpuType(Request());
  ASSERT_TRUE(advice.has_value());
  EXPECT_EQ(advice->kind, AdviceKind::kGpuType);
  // h100-94gb has more memory, but not enough.
  EXPECT_EQ(
      Candidates(training_, *ClusterSpec::Create(*FindGpuPreset("h100-94gb"), 2, 8), options_), 0);
  EXPECT_EQ(advice->gpu_type, "h200-141gb");
  EXPECT_EQ(advice->candidates, 5);
  // Nothing has more memory than the largest.
  cluster_ = *ClusterSpec::Create(*FindGpuPreset("h200-141gb"), 1, 8);
  EXPECT_FALSE(AdviseGpuType(Request()).has_value());
}

TEST_F(PlanAdviceTest, Fp8ParametersOnHopperOnly) {
  // On 2 nodes fp8 weights are not enough; on 5 nodes at micro-batch 2 they are.
  EXPECT_FALSE(AdviseFp8Parameters(Request()).has_value());
  cluster_ = *ClusterSpec::Create(cluster_.gpu(), 5, 8);
  options_.micro_batch_sizes = {2};
  ASSERT_EQ(Candidates(training_, cluster_, options_), 0);
  std::optional<PlanAdvice> advice = AdviseFp8Parameters(Request());
  ASSERT_TRUE(advice.has_value());
  EXPECT_EQ(advice->kind, AdviceKind::kFp8Parameters);
  TrainingOptions fp8 = training_.options();
  fp8.fp8 = true;
  fp8.fp8_param_gather = true;
  EXPECT_EQ(advice->candidates, Candidates(*TrainingSpec::Create(fp8), cluster_, options_));
  EXPECT_EQ(advice->candidates, 1);
  // Ampere has no fp8 tensor cores.
  cluster_ = *ClusterSpec::Create(*FindGpuPreset("a100-80gb"), 16, 8);
  EXPECT_FALSE(AdviseFp8Parameters(Request()).has_value());
}

TEST_F(PlanAdviceTest, TheLongestShorterSequenceThatFits) {
  std::optional<PlanAdvice> advice = AdviseShorterSequence(Request());
  ASSERT_TRUE(advice.has_value());
  EXPECT_EQ(advice->kind, AdviceKind::kSequenceLength);
  EXPECT_EQ(advice->seq_len, 1024);
  EXPECT_EQ(Candidates(*TrainingSpec::Create({1024, 2048}), cluster_, options_), 0);
  EXPECT_EQ(advice->candidates,
            Candidates(*TrainingSpec::Create({1024, 1024}), cluster_, options_));
}

TEST_F(PlanAdviceTest, MicroBatchesBelowTheSmallestSearched) {
  // The default sizes start at 1: nothing smaller.
  EXPECT_FALSE(AdviseSmallerMicroBatches(Request()).has_value());
  cluster_ = *ClusterSpec::Create(cluster_.gpu(), 4, 8);
  options_.micro_batch_sizes = {4, 8};
  ASSERT_EQ(Candidates(training_, cluster_, options_), 0);
  std::optional<PlanAdvice> advice = AdviseSmallerMicroBatches(Request());
  ASSERT_TRUE(advice.has_value());
  EXPECT_EQ(advice->kind, AdviceKind::kMicroBatchSizes);
  EXPECT_THAT(advice->micro_batch_sizes, ElementsAre(1, 2));
  EXPECT_EQ(advice->candidates, 3);
}

TEST_F(PlanAdviceTest, AdvisePlanListsEveryKindThatGivesCandidatesInOrder) {
  std::vector<AdviceKind> kinds;
  for (const PlanAdvice& advice : AdvisePlan(Request())) kinds.push_back(advice.kind);
  EXPECT_THAT(kinds, ElementsAre(AdviceKind::kRecompute, AdviceKind::kNodes, AdviceKind::kGpuType,
                                 AdviceKind::kSequenceLength));
}

}  // namespace
}  // namespace paratune
