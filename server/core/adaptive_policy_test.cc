#include "server/core/adaptive_policy.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "absl/strings/str_format.h"
#include "estimator/performance_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/core/test_probe_result.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;
using Kind = AdaptivePolicy::ProbeKind;

// Llama-3.1-8B on 4 x 4 H100-94GB, global batch 1024, sequence 8192: the README demo's plan.
class AdaptivePolicyTest : public ::testing::Test {
 protected:
  AdaptivePolicyTest()
      : model_(*FindModelPreset("llama3.1-8b")),
        training_(*TrainingSpec::Create({1024, 8192})),
        cluster_(*ClusterSpec::Create(*FindGpuPreset("h100-94gb"), 4, 4)),
        params_(DefaultPerformanceParameters(cluster_.gpu())),
        plan_(*PlanConfigurations(model_, training_, cluster_, PlanOptions(), params_)) {}

  std::unique_ptr<AdaptivePolicy> Policy(AdaptiveOptions options = AdaptiveOptions()) {
    return std::make_unique<AdaptivePolicy>(model_, training_, cluster_, plan_.candidates, params_,
                                            options);
  }

  // An OK result of candidate i whose measured throughput is `tflops`, with `steps` step
  // times spread by `relative_spread` around the mean.
  v1::ProbeResult Measured(size_t i, double tflops, int steps = 5, double relative_spread = 0) {
    const double flops = ModelFlopsPerStep(model_, training_);
    return TimedResult(tflops, flops / (tflops * 1e12 * cluster_.world_size()), steps,
                       relative_spread);
  }

  v1::ProbeResult Failed(v1::ProbeOutcome outcome) {
    v1::ProbeResult result;
    result.set_outcome(outcome);
    return result;
  }

  double Predicted(size_t i) const { return plan_.candidates[i].predicted.model_tflops_per_gpu; }

  const ModelSpec model_;
  const TrainingSpec training_;
  const ClusterSpec cluster_;
  const PerformanceParameters params_;
  const Plan plan_;
};

TEST_F(AdaptivePolicyTest, StartsWithTheBestPredictedUpToMaxInFlight) {
  ASSERT_GE(plan_.candidates.size(), 10u);
  AdaptiveOptions options;
  options.max_in_flight = 3;
  std::unique_ptr<AdaptivePolicy> policy = Policy(options);
  const AdaptivePolicy::Decision first = policy->Next();
  ASSERT_EQ(first.picks.size(), 3u);
  EXPECT_FALSE(first.stop_reason.has_value());
  // The planner's order is its predicted order.
  EXPECT_EQ(first.picks[0].candidate, 0u);
  EXPECT_EQ(first.picks[1].candidate, 1u);
  EXPECT_EQ(first.picks[0].kind, Kind::kScreening);
  EXPECT_THAT(first.picks[0].note, HasSubstr("predicted"));
  // Nothing more while three are in flight.
  EXPECT_TRUE(policy->Next().picks.empty());
  ASSERT_TRUE(
      policy->Record(first.picks[0].candidate, Kind::kScreening, Measured(0, Predicted(0))).ok());
  EXPECT_EQ(policy->Next().picks.size(), 1u);
}

// The console plots the bound from the pick's number, people read it in the note: the two
// must agree, before and after a measurement changes the note's form.
TEST_F(AdaptivePolicyTest, EachPickCarriesTheOptimisticBoundOfItsNote) {
  AdaptiveOptions options;
  options.max_in_flight = 2;
  std::unique_ptr<AdaptivePolicy> policy = Policy(options);
  const AdaptivePolicy::Decision first = policy->Next();
  ASSERT_TRUE(
      policy->Record(first.picks[0].candidate, Kind::kScreening, Measured(0, Predicted(0))).ok());
  const AdaptivePolicy::Decision second = policy->Next();
  ASSERT_EQ(first.picks.size(), 2u);
  ASSERT_EQ(second.picks.size(), 1u);
  EXPECT_THAT(second.picks[0].note, HasSubstr("> best measured"));
  for (const AdaptivePolicy::Pick& pick : {first.picks[0], first.picks[1], second.picks[0]}) {
    EXPECT_GT(pick.optimistic_tflops_per_gpu, 0);
    EXPECT_THAT(pick.note,
                HasSubstr(absl::StrFormat("(optimistic %.1f", pick.optimistic_tflops_per_gpu)));
  }
}

TEST_F(AdaptivePolicyTest, StopsEarlyOnceNothingCanWinAndFindsTheTrueBest) {
  // The measured world: the model's prediction, with the tenth candidate 5% faster than
  // predicted and everything else 10% slower. The policy must find the tenth.
  std::unique_ptr<AdaptivePolicy> policy = Policy();
  const size_t fast = 9;
  auto truth = [&](size_t i) { return Predicted(i) * (i == fast ? 1.05 : 0.90); };
  double best_found = 0;
  int probes = 0;
  while (true) {
    const AdaptivePolicy::Decision decision = policy->Next();
    if (decision.stop_reason.has_value()) {
      EXPECT_THAT(*decision.stop_reason, HasSubstr("no unprobed candidate can beat"));
      break;
    }
    ASSERT_FALSE(decision.picks.empty());
    for (const AdaptivePolicy::Pick& pick : decision.picks) {
      ++probes;
      best_found = std::max(best_found, truth(pick.candidate));
      ASSERT_TRUE(
          policy->Record(pick.candidate, pick.kind, Measured(pick.candidate, truth(pick.candidate)))
              .ok());
    }
  }
  double true_best = 0;
  for (size_t i = 0; i < plan_.candidates.size(); ++i) true_best = std::max(true_best, truth(i));
  EXPECT_GE(best_found, true_best / 1.02);
  EXPECT_LT(probes, static_cast<int>(plan_.candidates.size()));
}

TEST_F(AdaptivePolicyTest, OutOfMemorySkipsCandidatesNeedingAtLeastAsMuch) {
  std::unique_ptr<AdaptivePolicy> policy = Policy();
  const AdaptivePolicy::Decision first = policy->Next();
  const size_t failed = first.picks[0].candidate;
  const double failed_peak = plan_.candidates[failed].memory.peak_bytes;
  int64_t needing_more = 0;
  for (size_t i = 0; i < plan_.candidates.size(); ++i) {
    needing_more += i != failed && i != first.picks[1].candidate &&
                    plan_.candidates[i].memory.peak_bytes >= failed_peak;
  }
  ASSERT_TRUE(policy->Record(failed, Kind::kScreening, Failed(v1::PROBE_OUT_OF_MEMORY)).ok());
  EXPECT_EQ(static_cast<int64_t>(policy->SkippedForMemory().size()), needing_more);
  for (const AdaptivePolicy::Pick& pick : policy->Next().picks) {
    EXPECT_LT(plan_.candidates[pick.candidate].memory.peak_bytes, failed_peak);
  }
}

TEST_F(AdaptivePolicyTest, MeasuredMemoryAboveTheEstimateSkipsWhatWouldNotFit) {
  std::unique_ptr<AdaptivePolicy> policy = Policy();
  const AdaptivePolicy::Decision first = policy->Next();
  const size_t measured = first.picks[0].candidate;
  // The framework needs 1.6 x the estimate: whatever the calibrated estimate puts above
  // capacity even at its error bar's low end will not fit.
  v1::ProbeResult result = Measured(measured, Predicted(measured));
  result.set_peak_memory_bytes(
      static_cast<int64_t>(1.6 * plan_.candidates[measured].memory.peak_bytes));
  ASSERT_TRUE(policy->Record(measured, Kind::kScreening, result).ok());
  EXPECT_NEAR(policy->memory_calibration().ratio(), 1.6, 1e-6);
  const double capacity = plan_.candidates[measured].memory.capacity_bytes;
  int64_t expected = 0;
  for (size_t i = 0; i < plan_.candidates.size(); ++i) {
    if (i == measured || i == first.picks[1].candidate) continue;
    expected +=
        policy->memory_calibration().Calibrate(plan_.candidates[i].memory.peak_bytes).low_bytes >
        capacity;
  }
  ASSERT_GT(expected, 0);
  EXPECT_EQ(static_cast<int64_t>(policy->SkippedForMemory().size()), expected);
  for (const AdaptivePolicy::Pick& pick : policy->Next().picks) {
    EXPECT_LE(1.6 * plan_.candidates[pick.candidate].memory.peak_bytes /
                  std::exp(2 * policy->memory_calibration().relative_error()),
              capacity);
  }
}

TEST_F(AdaptivePolicyTest, LeadersWithinTheNoiseAreConfirmedOnce) {
  AdaptiveOptions options;
  options.max_in_flight = 1;
  std::unique_ptr<AdaptivePolicy> policy = Policy(options);
  // Every probe measures its prediction x 0.8, so after two probes nothing else can win...
  // except that the first two are within each other's noise (3% spread over 5 steps).
  const AdaptivePolicy::Decision first = policy->Next();
  ASSERT_TRUE(policy
                  ->Record(first.picks[0].candidate, Kind::kScreening,
                           Measured(first.picks[0].candidate, 500, 5, 0.03))
                  .ok());
  AdaptivePolicy::Decision decision = policy->Next();
  std::vector<size_t> confirmed;
  for (int rounds = 0; rounds < 200 && !decision.stop_reason.has_value(); ++rounds) {
    for (const AdaptivePolicy::Pick& pick : decision.picks) {
      if (pick.kind == Kind::kConfirmation) {
        // A confirmation is chosen on its measurement, not on a bound.
        EXPECT_EQ(pick.optimistic_tflops_per_gpu, 0);
        confirmed.push_back(pick.candidate);
        ASSERT_TRUE(policy->Record(pick.candidate, pick.kind, Measured(pick.candidate, 499)).ok());
        continue;
      }
      const double tflops = pick.candidate == 1 ? 495 : 300;
      ASSERT_TRUE(
          policy->Record(pick.candidate, pick.kind, Measured(pick.candidate, tflops, 5, 0.03))
              .ok());
    }
    decision = policy->Next();
  }
  ASSERT_TRUE(decision.stop_reason.has_value());
  // Candidate 0 (500) and candidate 1 (495) differ by 1%, within twice the standard error.
  std::sort(confirmed.begin(), confirmed.end());
  EXPECT_EQ(confirmed, (std::vector<size_t>{first.picks[0].candidate, 1}));
}

TEST_F(AdaptivePolicyTest, ClearWinnerNeedsNoConfirmation) {
  AdaptiveOptions options;
  options.max_in_flight = 1;
  std::unique_ptr<AdaptivePolicy> policy = Policy(options);
  AdaptivePolicy::Decision decision = policy->Next();
  while (!decision.stop_reason.has_value()) {
    for (const AdaptivePolicy::Pick& pick : decision.picks) {
      EXPECT_EQ(pick.kind, Kind::kScreening);
      const double tflops = pick.candidate == 0 ? Predicted(0) : 0.5 * Predicted(pick.candidate);
      ASSERT_TRUE(policy->Record(pick.candidate, pick.kind, Measured(pick.candidate, tflops)).ok());
    }
    decision = policy->Next();
  }
}

TEST_F(AdaptivePolicyTest, WhenEveryProbeFailsTheStopReasonSaysSo) {
  AdaptiveOptions options;
  options.max_in_flight = 64;
  std::unique_ptr<AdaptivePolicy> policy = Policy(options);
  AdaptivePolicy::Decision decision = policy->Next();
  while (!decision.stop_reason.has_value()) {
    for (const AdaptivePolicy::Pick& pick : decision.picks) {
      ASSERT_TRUE(policy->Record(pick.candidate, pick.kind, Failed(v1::PROBE_CRASH)).ok());
    }
    decision = policy->Next();
  }
  EXPECT_THAT(*decision.stop_reason, HasSubstr("no candidate could be measured"));
}

TEST_F(AdaptivePolicyTest, ResumedProbesCountAsInFlight) {
  AdaptiveOptions options;
  options.max_in_flight = 2;
  std::unique_ptr<AdaptivePolicy> policy = Policy(options);
  policy->MarkInFlight(5, Kind::kScreening);
  const AdaptivePolicy::Decision decision = policy->Next();
  ASSERT_EQ(decision.picks.size(), 1u);
  EXPECT_NE(decision.picks[0].candidate, 5u);
}

TEST_F(AdaptivePolicyTest, RecordRejectsBadInput) {
  std::unique_ptr<AdaptivePolicy> policy = Policy();
  EXPECT_EQ(policy->Record(plan_.candidates.size(), Kind::kScreening, Measured(0, 1)).code(),
            absl::StatusCode::kInvalidArgument);
  v1::ProbeResult no_time = Measured(0, 100);
  no_time.set_mean_step_time_seconds(0);
  EXPECT_EQ(policy->Record(0, Kind::kScreening, no_time).code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace paratune
