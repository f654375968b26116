#include "estimator/search_cost.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;

// A candidate whose step is `per_micro_batch` seconds of per-micro-batch terms (compute) plus
// `per_step` seconds of per-step terms (optimizer), at `tflops` TFLOP/s per GPU and a 5%
// relative error; short steps at `counts` of `full_micro_batches`.
CostCandidate Candidate(double per_micro_batch, double per_step, double tflops,
                        int64_t full_micro_batches, std::vector<int64_t> counts) {
  CostCandidate candidate;
  candidate.predicted.compute_seconds = per_micro_batch;
  candidate.predicted.optimizer_seconds = per_step;
  candidate.predicted.step_time_seconds = per_micro_batch + per_step;
  candidate.predicted.model_tflops_per_gpu = tflops;
  candidate.predicted.relative_error = 0.05;
  candidate.short_probe.full_micro_batches = full_micro_batches;
  candidate.short_probe.micro_batch_counts = std::move(counts);
  return candidate;
}

// Three candidates in predicted order, worked by hand (30 s start-up, 2 warm-up, 5 timed):
// a: 10 s of micro-batches over 20 plus 2 s per step, 12 s full steps, short steps of 4 and 8
//    micro-batches: 0.5 m + 2 = 4 s and 6 s; probe 30 + 2 x 4 + 5 x 4 + 5 x 6 = 88 s;
//    confirmation (20 timed) 30 + 8 + 80 + 120 = 238 s; job 30 + 50 x 12 = 630 s.
// b: 20 s full steps, no short steps: probe 30 + 7 x 20 = 170 s; confirmation
//    30 + 22 x 20 = 470 s; job 30 + 50 x 20 = 1,030 s.
// c: 40 s full steps: probe 30 + 7 x 40 = 310 s; job 30 + 2,000 s, cut at 1,800 s.
std::vector<CostCandidate> ThreeCandidates() {
  return {Candidate(10, 2, 400, 20, {4, 8}), Candidate(19, 1, 390, 4, {}),
          Candidate(39, 1, 300, 4, {})};
}

TEST(SearchCostTest, ProbeSecondsAreStartUpWarmUpAndTimedShortSteps) {
  const std::vector<CostCandidate> candidates = ThreeCandidates();
  const ProbeSteps steps;
  EXPECT_DOUBLE_EQ(ProbeSeconds(candidates[0], steps), 88);
  ProbeSteps confirmation = steps;
  confirmation.timed_steps = 20;
  EXPECT_DOUBLE_EQ(ProbeSeconds(candidates[0], confirmation), 238);
  EXPECT_DOUBLE_EQ(ProbeSeconds(candidates[1], steps), 170);
  EXPECT_DOUBLE_EQ(ProbeSeconds(candidates[2], steps), 310);

  // A backend that runs full steps: 30 + 7 x 12 = 114 s.
  ProbeSteps full_steps;
  full_steps.short_steps = false;
  EXPECT_DOUBLE_EQ(ProbeSeconds(candidates[0], full_steps), 114);
  EXPECT_DOUBLE_EQ(ProbeSeconds(candidates[1], full_steps), 170);

  // A launch per count: (30 + 7 x 4) + (30 + 7 x 6) = 130 s, more than one launch of full
  // steps (114 s), which the probe runs instead; without start-up, 70 s against 84 s.
  ProbeSteps launches;
  launches.launch_per_count = true;
  EXPECT_DOUBLE_EQ(ProbeSeconds(candidates[0], launches), 114);
  EXPECT_DOUBLE_EQ(ProbeSeconds(candidates[1], launches), 170);
  launches.startup_seconds = 0;
  EXPECT_DOUBLE_EQ(ProbeSeconds(candidates[0], launches), 70);
}

TEST(SearchCostTest, FullJobIsStartUpAndItsStepsCutAtTheTimeLimit) {
  const std::vector<CostCandidate> candidates = ThreeCandidates();
  EXPECT_DOUBLE_EQ(FullJobSeconds(candidates[0].predicted, 50, 1800, 30), 630);
  EXPECT_DOUBLE_EQ(FullJobSeconds(candidates[1].predicted, 50, 1800, 30), 1030);
  EXPECT_DOUBLE_EQ(FullJobSeconds(candidates[2].predicted, 50, 1800, 30), 1800);
}

TEST(SearchCostTest, AdaptiveCountsTheCandidatesWhoseOptimisticBoundBeatsTheBar) {
  const std::vector<CostCandidate> candidates = ThreeCandidates();
  // Bar 400 x 1.02 = 408; bounds x exp(2 x 0.05) = 1.105: a 442.1, b 431.0, c 331.6.
  EXPECT_EQ(AdaptiveExpectedProbes(candidates, 0.02, 2, 1), 2);
  // 1 sigma: x 1.051: b 409.99 still beats 408; with a 3% tolerance (412) it does not.
  EXPECT_EQ(AdaptiveExpectedProbes(candidates, 0.02, 1, 1), 2);
  EXPECT_EQ(AdaptiveExpectedProbes(candidates, 0.03, 1, 1), 1);
  // x exp(0.1 x 0.05) = 1.005: not even the best beats its own 2% bar, but the first probes
  // start before any result is in.
  EXPECT_EQ(AdaptiveExpectedProbes(candidates, 0.02, 0.1, 1), 1);
  EXPECT_EQ(AdaptiveExpectedProbes(candidates, 0.02, 2, 3), 3);
  EXPECT_EQ(AdaptiveExpectedProbes(candidates, 0.02, 2, 8), 3);
  EXPECT_EQ(AdaptiveExpectedProbes({}, 0.02, 2, 2), 0);
}

TEST(SearchCostTest, ProjectionOfEveryPolicy) {
  const absl::StatusOr<SearchCostProjection> projection =
      ProjectSearchCost(ThreeCandidates(), 64, SearchCostOptions());
  ASSERT_TRUE(projection.ok()) << projection.status();
  EXPECT_EQ(projection->gpus, 64);

  EXPECT_EQ(projection->adaptive.runs, 2);
  EXPECT_DOUBLE_EQ(projection->adaptive.total_seconds, 88 + 170);
  EXPECT_DOUBLE_EQ(projection->adaptive.longest_seconds, 170);
  EXPECT_DOUBLE_EQ(MeanSeconds(projection->adaptive), 129);
  EXPECT_DOUBLE_EQ(GpuHours(projection->adaptive, 64), 258.0 * 64 / 3600);
  EXPECT_DOUBLE_EQ(WallHours(projection->adaptive), 258.0 / 3600);
  // Both probed candidates confirmed with 4 x 5 = 20 timed steps.
  EXPECT_EQ(projection->adaptive_confirmations.runs, 2);
  EXPECT_DOUBLE_EQ(projection->adaptive_confirmations.total_seconds, 238 + 470);
  EXPECT_DOUBLE_EQ(projection->adaptive_confirmations.longest_seconds, 470);

  // k = 8 takes all three.
  EXPECT_EQ(projection->top_k.runs, 3);
  EXPECT_DOUBLE_EQ(projection->top_k.total_seconds, 88 + 170 + 310);
  EXPECT_EQ(projection->exhaustive.runs, 3);
  EXPECT_DOUBLE_EQ(projection->exhaustive.total_seconds, 568);
  EXPECT_DOUBLE_EQ(projection->exhaustive.longest_seconds, 310);

  // a: a probe of full 12 s steps would take 30 + 7 x 12 = 114 s.
  EXPECT_DOUBLE_EQ(projection->best_step_seconds, 12);
  EXPECT_DOUBLE_EQ(projection->best_probe_seconds, 88);
  EXPECT_DOUBLE_EQ(projection->best_full_step_probe_seconds, 114);

  EXPECT_EQ(projection->full_jobs.runs, 3);
  EXPECT_DOUBLE_EQ(projection->full_jobs.total_seconds, 630 + 1030 + 1800);
  EXPECT_DOUBLE_EQ(projection->full_jobs.longest_seconds, 1800);
  EXPECT_DOUBLE_EQ(GpuHours(projection->full_jobs, 64), 3460.0 * 64 / 3600);
}

TEST(SearchCostTest, OptionsChangeTheProjection) {
  SearchCostOptions options;
  options.top_k = 1;
  options.max_confirmations = 1;
  options.confirmation_steps_factor = 2;
  options.steps.startup_seconds = 0;
  options.steps.warmup_steps = 0;
  options.full_job_steps = 10;
  const absl::StatusOr<SearchCostProjection> projection =
      ProjectSearchCost(ThreeCandidates(), 8, options);
  ASSERT_TRUE(projection.ok()) << projection.status();
  EXPECT_EQ(projection->top_k.runs, 1);
  EXPECT_DOUBLE_EQ(projection->top_k.total_seconds, 5 * 4 + 5 * 6);
  // The best, confirmed with 10 timed steps at each count.
  EXPECT_EQ(projection->adaptive_confirmations.runs, 1);
  EXPECT_DOUBLE_EQ(projection->adaptive_confirmations.total_seconds, 10 * 4 + 10 * 6);
  EXPECT_DOUBLE_EQ(projection->full_jobs.total_seconds, 120 + 200 + 400);

  options.max_confirmations = 0;
  EXPECT_EQ(ProjectSearchCost(ThreeCandidates(), 8, options)->adaptive_confirmations.runs, 0);
}

TEST(SearchCostTest, NoCandidatesCostNothing) {
  const absl::StatusOr<SearchCostProjection> projection =
      ProjectSearchCost({}, 16, SearchCostOptions());
  ASSERT_TRUE(projection.ok());
  EXPECT_EQ(projection->adaptive.runs, 0);
  EXPECT_EQ(projection->exhaustive.runs, 0);
  EXPECT_DOUBLE_EQ(MeanSeconds(projection->exhaustive), 0);
  EXPECT_DOUBLE_EQ(GpuHours(projection->full_jobs, 16), 0);
  EXPECT_DOUBLE_EQ(projection->best_probe_seconds, 0);
}

TEST(SearchCostTest, BadOptionsNameTheField) {
  SearchCostOptions options;
  options.tolerance = 0;
  absl::Status status = ProjectSearchCost(ThreeCandidates(), 8, options).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("tolerance (0) must be in (0, 1]"));

  options = SearchCostOptions();
  options.steps.timed_steps = 0;
  status = CheckSearchCostOptions(options);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("timed_steps (0) must be >= 1"));

  options = SearchCostOptions();
  options.confidence_sigmas = -1;
  EXPECT_THAT(CheckSearchCostOptions(options).message(),
              HasSubstr("confidence_sigmas (-1) must be finite and > 0"));

  status = ProjectSearchCost(ThreeCandidates(), 0, SearchCostOptions()).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("gpus (0) must be >= 1"));
}

// On a real plan: one candidate per planned configuration with its own short steps, and the
// policies nested as they must be.
TEST(SearchCostTest, PlanCandidatesKeepThePlansOrderAndShortSteps) {
  const ModelSpec model = *FindModelPreset("llama3.1-8b");
  const TrainingSpec training = *TrainingSpec::Create({1024, 8192});
  const ClusterSpec cluster = *ClusterSpec::Create(*FindGpuPreset("h100-94gb"), 4, 4);
  const Plan plan = *PlanConfigurations(model, training, cluster, PlanOptions(),
                                        DefaultPerformanceParameters(cluster.gpu()));
  const std::vector<CostCandidate> candidates = CostCandidates(plan, training);
  ASSERT_EQ(candidates.size(), plan.candidates.size());
  ASSERT_GT(candidates.size(), 8u);
  for (size_t i = 0; i < candidates.size(); ++i) {
    EXPECT_DOUBLE_EQ(candidates[i].predicted.step_time_seconds,
                     plan.candidates[i].predicted.step_time_seconds);
    EXPECT_EQ(candidates[i].short_probe.micro_batch_counts,
              PlanShortProbe(plan.candidates[i].config, training).micro_batch_counts);
  }
  const SearchCostProjection projection =
      *ProjectSearchCost(candidates, cluster.world_size(), SearchCostOptions());
  EXPECT_EQ(projection.gpus, 16);
  EXPECT_EQ(projection.top_k.runs, 8);
  EXPECT_EQ(projection.exhaustive.runs, static_cast<int64_t>(candidates.size()));
  EXPECT_GE(projection.adaptive.runs, 2);
  EXPECT_LE(projection.adaptive.total_seconds, projection.exhaustive.total_seconds);
  EXPECT_LT(projection.exhaustive.total_seconds, projection.full_jobs.total_seconds);
}

}  // namespace
}  // namespace paratune
