#include "cli/cost_report.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// The hand-worked projection of estimator/search_cost_test.cc's three candidates on 64 GPUs:
// ADAPTIVE probes a (88 s) and b (170 s) and may confirm both (238 s, 470 s); TOP_K 8 and
// EXHAUSTIVE probe all three (88 + 170 + 310 s); the full jobs take 630, 1,030 and 1,800 s.
SearchCostProjection HandProjection() {
  SearchCostProjection projection;
  projection.gpus = 64;
  projection.adaptive = {2, 258, 170};
  projection.adaptive_confirmations = {2, 708, 470};
  projection.top_k = {3, 568, 310};
  projection.exhaustive = {3, 568, 310};
  projection.full_jobs = {3, 3460, 1800};
  projection.best_step_seconds = 12;
  projection.best_probe_seconds = 88;
  projection.best_full_step_probe_seconds = 114;
  return projection;
}

ClusterSpec EightByEight() { return *ClusterSpec::Create(*FindGpuPreset("h100-80gb"), 8, 8); }

// GPU-hours are seconds x 64 / 3600 and wall hours seconds / 3600: ADAPTIVE 258 s -> 4.59 and
// 0.07, with its confirmations 966 s -> 17.2 and 0.27; TOP_K and EXHAUSTIVE 568 s -> 10.1 and
// 0.16, 189 s each on average; the full jobs 3,460 s -> 61.5 and 0.96, 1,153 s each. ADAPTIVE
// is 258 / 3,460 = 7.5% of the full jobs, 966 / 3,460 = 27.9% with its confirmations.
TEST(CostReportTest, EveryPolicyNextToOneFullJobPerCandidate) {
  EXPECT_EQ(FormatSearchCost(HandProjection(), SearchCostOptions(), EightByEight(), 0.063,
                             {v1::ADAPTIVE, v1::TOP_K, v1::EXHAUSTIVE}),
            "Projected cost: probes one after another, each holding all 64 GPUs (8 x 8 "
            "h100-80gb); a probe\n"
            "starts up in 30 s, then runs 2 warm-up and 5 timed steps at 2 pp and 4 pp "
            "micro-batches\n"
            "(full steps where a step has no more than 4 pp micro-batches)\n"
            "The best predicted candidate: full step 12.0 s; its probe 88 s (114 s with full "
            "steps)\n"
            "search                      probes  s each  longest s  GPU-hours     wall h\n"
            "--------------------------  ------  ------  ---------  ---------  ---------\n"
            "ADAPTIVE                       2-4     129    170-470  4.59-17.2  0.07-0.27\n"
            "TOP_K 8                          3     189        310       10.1       0.16\n"
            "EXHAUSTIVE                       3     189        310       10.1       0.16\n"
            "one full job per candidate       3    1153       1800       61.5       0.96\n"
            "ADAPTIVE: 2 probes if every measurement equals its prediction (a projection): the "
            "candidates\n"
            "whose optimistic prediction, x exp(2 sigma x 6.3% model error), beats the best "
            "prediction by\n"
            "more than 2%, and at least the first 2, started at once. A real search probes more "
            "or fewer.\n"
            "The upper figures add 2 confirmations of 20 timed steps.\n"
            "One full job per candidate: each trained as NVIDIA NeMo's AutoConfigurator runs it, "
            "50 steps\n"
            "under a 30-minute job limit (its max_steps_per_run and max_minutes_per_run "
            "defaults), with the\n"
            "same 30 s start-up.\n"
            "ADAPTIVE costs 7.5%-27.9% of the GPU-hours of one full job per candidate.\n");
}

TEST(CostReportTest, OnePolicyWithoutAdaptiveLeavesItsNotesOut) {
  const std::string text = FormatSearchCost(HandProjection(), SearchCostOptions(), EightByEight(),
                                            0.063, {v1::EXHAUSTIVE});
  EXPECT_THAT(text, HasSubstr("\nEXHAUSTIVE                       3     189        310"));
  EXPECT_THAT(text, Not(HasSubstr("ADAPTIVE")));
  EXPECT_THAT(text, Not(HasSubstr("TOP_K")));
  EXPECT_THAT(text, HasSubstr("one full job per candidate"));
}

TEST(CostReportTest, AdaptiveWithoutConfirmationsIsOneFigure) {
  SearchCostProjection projection = HandProjection();
  projection.adaptive_confirmations = {};
  SearchCostOptions options;
  options.max_confirmations = 0;
  const std::string text =
      FormatSearchCost(projection, options, EightByEight(), 0.063, {v1::ADAPTIVE});
  EXPECT_THAT(text, HasSubstr("\nADAPTIVE                         2     129        170       "
                              "4.59    0.07\n"));
  EXPECT_THAT(text, Not(HasSubstr("confirmations")));
  EXPECT_THAT(text, HasSubstr("ADAPTIVE costs 7.5% of the GPU-hours"));
}

TEST(CostReportTest, NoCandidateNothingToProject) {
  EXPECT_EQ(FormatSearchCost(SearchCostProjection{}, SearchCostOptions(), EightByEight(), 0.063,
                             {v1::ADAPTIVE}),
            "Projected cost: none, the plan has no candidate to probe.\n");
}

TEST(CostReportTest, FullStepProbesAreSaidSo) {
  SearchCostOptions options;
  options.steps.short_steps = false;
  EXPECT_THAT(FormatSearchCost(HandProjection(), options, EightByEight(), 0.063, {v1::ADAPTIVE}),
              HasSubstr("starts up in 30 s, then runs 2 warm-up and 5 timed steps of the full "
                        "global batch\n(the search's backend answers with full steps)\n"));
}

TEST(CostReportTest, ALaunchPerCountIsSaidSo) {
  SearchCostOptions options;
  options.steps.launch_per_count = true;
  options.steps.startup_seconds = 120;
  EXPECT_THAT(FormatSearchCost(HandProjection(), options, EightByEight(), 0.063, {v1::ADAPTIVE}),
              HasSubstr("launches its template at 2 pp and at 4 pp micro-batches, each launch "
                        "starting up in 120 s,\nthen running 2 warm-up and 5 timed steps"));
}

}  // namespace
}  // namespace paratune
