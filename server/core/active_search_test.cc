#include "server/core/active_search.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "convert/search_progress.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "server/core/test_probe_result.h"
#include "server/core/test_requests.h"

namespace paratune {
namespace {

using ::google::protobuf::util::MessageDifferencer;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Key;
using ::testing::Not;

const absl::Time kCreated = absl::FromUnixSeconds(1'000'000);

ActiveSearch NewSearch(v1::CreateSearchRequest request) {
  absl::StatusOr<ValidatedSearchRequest> validated = ValidateCreateSearchRequest(request);
  EXPECT_TRUE(validated.ok()) << validated.status();
  absl::StatusOr<PlannedSearch> planned = PlanSearch(validated->spec);
  EXPECT_TRUE(planned.ok()) << planned.status();
  return ActiveSearch(7, request, *validated, *std::move(planned), kCreated, "alice",
                      /*exempt_from_limits=*/false);
}

// The ns of what `advanced` queued.
std::vector<int64_t> Queued(const ActiveSearch::Advanced& advanced) {
  std::vector<int64_t> queued;
  for (const ActiveSearch::Advanced::Queued& pick : advanced.queued) queued.push_back(pick.n);
  return queued;
}

v1::ProbeResult Ok(double tflops) { return TimedResult(tflops, 1, 1); }

v1::ProbeResult Failed(v1::ProbeOutcome outcome) {
  v1::ProbeResult result;
  result.set_outcome(outcome);
  return result;
}

// Candidate n's probe measured as predicted, its step times 3% apart: close leaders cannot be
// told apart, so ADAPTIVE confirms them.
v1::ProbeResult AsPredicted(const ActiveSearch& search, int64_t n) {
  const v1::Candidate& candidate = search.search().candidates(n);
  return TimedResult(candidate.predicted().model_tflops_per_gpu(),
                     candidate.predicted().step_time_seconds(), search.Timing(n).timed_steps, 0.03);
}

// An ADAPTIVE search run as predicted until its policy queues a confirmation; returns its n.
int64_t RunToAConfirmation(ActiveSearch& search) {
  for (int round = 0; round < 100; ++round) {
    const ActiveSearch::Advanced advanced = search.Advance(kCreated);
    EXPECT_FALSE(advanced.ended) << search.search().stop_reason();
    for (const ActiveSearch::Advanced::Queued& queued : advanced.queued) {
      if (queued.confirmation) return queued.n;
    }
    for (int64_t n : Queued(advanced)) {
      search.Leased(n, "workers/1");
      search.RecordResult(n, AsPredicted(search, n));
    }
    if (advanced.ended) break;
  }
  ADD_FAILURE() << "no confirmation";
  return 0;
}

TEST(ActiveSearchTest, ANewSearchProbesOrFailsWithTheReason) {
  const ActiveSearch search = NewSearch(SmallSimSearch(2));
  EXPECT_EQ(search.search().name(), "searches/7");
  EXPECT_EQ(search.search().creator(), "alice");
  EXPECT_FALSE(search.exempt_from_limits());
  EXPECT_EQ(search.search().state(), v1::PROBING);
  EXPECT_GT(search.search().counts().memory_safe(), 2);

  v1::CreateSearchRequest too_long = SmallSimSearch(2);
  too_long.mutable_spec()->mutable_training()->set_seq_len(1 << 20);
  const ActiveSearch failed = NewSearch(too_long);
  EXPECT_EQ(failed.search().state(), v1::FAILED);
  EXPECT_THAT(failed.search().stop_reason(), HasSubstr("no memory-safe configuration"));
}

TEST(ActiveSearchTest, PicksBecomeQueuedCandidatesAndTheSearchEndsWhenAllAreProbed) {
  ActiveSearch search = NewSearch(SmallSimSearch(2));
  const ActiveSearch::Advanced advanced = search.Advance(kCreated);
  EXPECT_THAT(Queued(advanced), ElementsAre(0, 1));
  EXPECT_FALSE(advanced.queued[0].confirmation);
  EXPECT_FALSE(advanced.stopped);
  EXPECT_FALSE(advanced.ended);
  EXPECT_THAT(search.search().candidates(0).selection_note(), Not(IsEmpty()));
  EXPECT_EQ(search.search().candidates(1).name(), "searches/7/candidates/1");
  EXPECT_EQ(search.search().candidates(1).state(), v1::CANDIDATE_QUEUED);
  EXPECT_EQ(search.search().counts().selected(), 2);

  search.Leased(0, "workers/1");
  EXPECT_FALSE(search.RecordResult(0, Ok(300)).screening_result_stands);
  const ActiveSearch::Recorded recorded = search.RecordResult(1, Failed(v1::PROBE_OUT_OF_MEMORY));
  const v1::SearchCounts& counts = search.search().counts();
  EXPECT_EQ(counts.probed(), 2);
  EXPECT_EQ(counts.succeeded(), 1);
  EXPECT_EQ(counts.failed_by_outcome().at("PROBE_OUT_OF_MEMORY"), 1);
  EXPECT_FALSE(recorded.screening_result_stands);
  // TOP_K rules nothing out for memory.
  EXPECT_TRUE(recorded.ruled_out.empty());

  const ActiveSearch::Advanced last = search.Advance(kCreated);
  EXPECT_TRUE(last.ended);
  EXPECT_THAT(last.queued, IsEmpty());
  EXPECT_EQ(search.search().state(), v1::SUCCEEDED);
  EXPECT_THAT(search.search().stop_reason(), HasSubstr("probed all 2 selected candidates"));
}

TEST(ActiveSearchTest, AConfirmationKeepsItsBoundAndAFailedOneLeavesTheScreeningResult) {
  v1::CreateSearchRequest request = SmallSimSearch(0);
  request.mutable_spec()->set_policy(v1::ADAPTIVE);
  ActiveSearch search = NewSearch(request);
  const int64_t n = RunToAConfirmation(search);
  const v1::Candidate& candidate = search.search().candidates(n);
  EXPECT_EQ(candidate.state(), v1::CANDIDATE_QUEUED);
  EXPECT_TRUE(candidate.has_screening_result());
  EXPECT_FALSE(candidate.has_probe_result());
  // Chosen on its measurement: the bound it was first chosen on stays.
  EXPECT_GT(candidate.optimistic_tflops_per_gpu(), 0);
  EXPECT_EQ(search.Timing(n).timed_steps, 5 * 4);
  const double screening = candidate.screening_result().model_tflops_per_gpu();

  search.Leased(n, "workers/1");
  EXPECT_TRUE(search.RecordResult(n, Failed(v1::PROBE_CRASH)).screening_result_stands);
  EXPECT_EQ(search.search().candidates(n).probe_result().model_tflops_per_gpu(), screening);
  EXPECT_FALSE(search.search().candidates(n).has_screening_result());
  EXPECT_EQ(search.search().counts().confirmations(), 1);
}

// Before, a confirmation counted its screening probe's attempt as its first: with the
// default 2 attempts, a lost worker gave it up at once.
TEST(ActiveSearchTest, AConfirmationHasAttemptsOfItsOwn) {
  v1::CreateSearchRequest request = SmallSimSearch(0);
  request.mutable_spec()->set_policy(v1::ADAPTIVE);
  ActiveSearch search = NewSearch(request);
  const int64_t n = RunToAConfirmation(search);
  ASSERT_EQ(search.search().spec().probe().max_attempts(), 2);
  EXPECT_EQ(search.search().candidates(n).screening_attempts(), 1);
  EXPECT_EQ(ProbeAttempts(search.search().candidates(n)), 0);

  search.Leased(n, "workers/1");
  EXPECT_EQ(ProbeAttempts(search.search().candidates(n)), 1);
  const ActiveSearch::Retried retried =
      search.Retry(n, "worker lost", ActiveSearch::Unfinished::kLeaseEnded);
  EXPECT_FALSE(retried.gave_up.has_value());
  EXPECT_EQ(search.search().candidates(n).state(), v1::CANDIDATE_QUEUED);

  search.Leased(n, "workers/2");
  EXPECT_EQ(search.search().candidates(n).attempts(), 3);
  const ActiveSearch::Retried gave_up =
      search.Retry(n, "worker lost", ActiveSearch::Unfinished::kLeaseEnded);
  ASSERT_TRUE(gave_up.gave_up.has_value());
  EXPECT_TRUE(gave_up.gave_up->screening_result_stands);
}

TEST(ActiveSearchTest, OutlookCountsWhatIsLeftAndWhatItWouldCost) {
  ActiveSearch top_k = NewSearch(SmallSimSearch(2));
  top_k.Advance(kCreated);
  const v1::SearchCounts& counts = top_k.search().counts();
  // Both are queued: nothing left to pick, two probes of at least their 30 s start-up left.
  EXPECT_EQ(counts.still_contending(), 0);
  EXPECT_GT(counts.projected_remaining_wall_seconds(), 2 * 30);
  EXPECT_DOUBLE_EQ(counts.projected_remaining_gpu_seconds(),
                   8 * counts.projected_remaining_wall_seconds());
  top_k.RecordResult(0, Ok(300));
  top_k.RecordResult(1, Ok(250));
  top_k.Advance(kCreated);
  EXPECT_EQ(top_k.search().counts().projected_remaining_wall_seconds(), 0);

  v1::CreateSearchRequest request = SmallSimSearch(2);
  request.mutable_spec()->set_policy(v1::ADAPTIVE);
  ActiveSearch adaptive = NewSearch(request);
  EXPECT_EQ(adaptive.Advance(kCreated).queued.size(), 2u);
  // Before any measurement every candidate not picked may still win.
  EXPECT_EQ(adaptive.search().counts().still_contending(),
            adaptive.search().counts().memory_safe() - 2);
  adaptive.End(v1::CANCELLED, "cancelled");
  EXPECT_EQ(adaptive.search().counts().still_contending(), 0);
  EXPECT_EQ(adaptive.search().candidates(0).state(), v1::CANDIDATE_SKIPPED);
}

TEST(ActiveSearchTest, AProbeIsRetriedWhileAttemptsRemainThenGivenUp) {
  ActiveSearch search = NewSearch(SmallSimSearch(1));
  search.Advance(kCreated);
  search.Leased(0, "workers/1");
  ActiveSearch::Retried retried =
      search.Retry(0, "workers/1 lost", ActiveSearch::Unfinished::kLeaseEnded);
  EXPECT_FALSE(retried.gave_up.has_value());
  EXPECT_EQ(search.search().candidates(0).state(), v1::CANDIDATE_QUEUED);
  EXPECT_EQ(search.search().candidates(0).attempts(), 1);
  EXPECT_EQ(search.search().candidates(0).worker(), "");

  // A launch that never started counts its attempt now: the second of max_attempts (2).
  retried = search.Retry(0, "its job ended", ActiveSearch::Unfinished::kLaunchEnded);
  ASSERT_TRUE(retried.gave_up.has_value());
  const v1::Candidate& candidate = search.search().candidates(0);
  EXPECT_EQ(candidate.attempts(), 2);
  EXPECT_EQ(candidate.state(), v1::CANDIDATE_PROBED);
  EXPECT_EQ(candidate.probe_result().outcome(), v1::PROBE_INFRA_ERROR);
  EXPECT_EQ(candidate.probe_result().message(), "gave up after 2 attempts; last: its job ended");
  EXPECT_TRUE(search.Advance(kCreated).ended);
  EXPECT_EQ(search.search().state(), v1::FAILED);
}

TEST(ActiveSearchTest, RefusalsCountOnlyWhileTheyRepeat) {
  v1::CreateSearchRequest request = SmallSimSearch(2);
  request.mutable_spec()->mutable_probe()->set_max_attempts(10);
  ActiveSearch search = NewSearch(request);
  search.Advance(kCreated);
  const auto refuse = [&](int64_t n, const std::string& reason) {
    return search.Retry(n, reason, ActiveSearch::Unfinished::kLaunchRefused).stop_reason;
  };
  EXPECT_FALSE(refuse(0, "gres").has_value());
  EXPECT_FALSE(refuse(0, "gres").has_value());
  EXPECT_FALSE(refuse(0, "partition").has_value());
  EXPECT_FALSE(refuse(0, "partition").has_value());
  search.Leased(0, "workers/1");
  EXPECT_FALSE(refuse(1, "partition").has_value());
  EXPECT_FALSE(refuse(1, "partition").has_value());
  EXPECT_EQ(refuse(1, "partition"),
            "stopped after 3 launches in a row were refused the same way "
            "(probe.max_launch_failures 3): partition");
  EXPECT_EQ(search.search().candidates(1).attempts(), 3);
}

TEST(ActiveSearchTest, ABudgetReachedStopsProbingAndItsDeadlineStopsRunningProbes) {
  v1::CreateSearchRequest request = SmallSimSearch(2);
  request.mutable_spec()->mutable_budget()->set_max_gpu_seconds(45);
  ActiveSearch spent = NewSearch(request);
  spent.Advance(kCreated);
  spent.Leased(0, "workers/1");
  spent.AddGpuSeconds(40, /*failed=*/false);
  spent.AddGpuSeconds(10, /*failed=*/true);
  EXPECT_EQ(spent.search().counts().gpu_seconds(), 50);
  EXPECT_EQ(spent.search().counts().failed_gpu_seconds(), 10);
  ActiveSearch::Advanced advanced = spent.Advance(kCreated);
  EXPECT_TRUE(advanced.stopped);
  EXPECT_FALSE(advanced.stop_running);
  // The running probe finishes; the queued one is skipped.
  EXPECT_FALSE(advanced.ended);
  EXPECT_EQ(spent.search().candidates(0).state(), v1::CANDIDATE_RUNNING);
  EXPECT_EQ(spent.search().candidates(1).state(), v1::CANDIDATE_SKIPPED);
  spent.RecordResult(0, Ok(300));
  EXPECT_TRUE(spent.Advance(kCreated).ended);
  EXPECT_THAT(spent.search().stop_reason(),
              HasSubstr("budget: max_gpu_seconds (45) reached after 50 GPU-seconds"));

  request = SmallSimSearch(2);
  request.mutable_spec()->mutable_budget()->set_max_probes(2);
  ActiveSearch probes = NewSearch(request);
  probes.Advance(kCreated);
  probes.Leased(0, "workers/1");
  probes.Retry(0, "lost", ActiveSearch::Unfinished::kLeaseEnded);
  probes.Retry(1, "its job ended", ActiveSearch::Unfinished::kLaunchEnded);
  EXPECT_TRUE(probes.Advance(kCreated).ended);
  EXPECT_THAT(probes.search().stop_reason(), HasSubstr("budget: max_probes (2) reached"));

  request = SmallSimSearch(2);
  request.mutable_spec()->mutable_budget()->set_deadline_seconds(60);
  ActiveSearch late = NewSearch(request);
  late.Advance(kCreated);
  late.Leased(0, "workers/1");
  advanced = late.Advance(kCreated + absl::Minutes(1));
  EXPECT_TRUE(advanced.stopped);
  EXPECT_TRUE(advanced.stop_running);
  EXPECT_TRUE(advanced.ended);
  EXPECT_EQ(late.search().candidates(0).state(), v1::CANDIDATE_SKIPPED);
  EXPECT_THAT(late.search().stop_reason(), HasSubstr("budget: deadline (1m) passed"));
}

// The n of the candidates of `after` that `before` lacks or holds otherwise.
std::set<int64_t> Differing(const v1::Search& before, const v1::Search& after) {
  std::set<int64_t> differing;
  for (int n = 0; n < after.candidates_size(); ++n) {
    if (n >= before.candidates_size() ||
        !MessageDifferencer::Equals(before.candidates(n), after.candidates(n))) {
      differing.insert(n);
    }
  }
  return differing;
}

// Runs `change` and expects the next update to hold the search's fields without candidates
// and exactly the candidates that changed, as they are now.
void ExpectUpdateNamesWhatChanged(ActiveSearch& search, const std::function<void()>& change) {
  const v1::Search before = search.search();
  change();
  const SearchUpdate update = search.TakeUpdate(kCreated + absl::Hours(1));
  std::set<int64_t> named;
  for (const auto& [n, candidate] : update.candidates) {
    named.insert(n);
    EXPECT_TRUE(MessageDifferencer::Equals(candidate, search.search().candidates(n))) << n;
  }
  EXPECT_EQ(named, Differing(before, search.search()));
  v1::Search fields = search.search();
  fields.clear_candidates();
  EXPECT_TRUE(MessageDifferencer::Equals(update.fields, fields));
  EXPECT_EQ(update.fields.update_time().seconds(), absl::ToUnixSeconds(kCreated + absl::Hours(1)));
}

TEST(ActiveSearchTest, EachUpdateNamesExactlyTheCandidatesThatChanged) {
  v1::CreateSearchRequest request = SmallSimSearch(3);
  ActiveSearch search = NewSearch(request);
  ExpectUpdateNamesWhatChanged(search, [&] { search.Advance(kCreated); });
  ExpectUpdateNamesWhatChanged(search, [&] { search.Leased(1, "workers/1"); });
  ExpectUpdateNamesWhatChanged(
      search, [&] { search.Retry(1, "lost", ActiveSearch::Unfinished::kLeaseEnded); });
  ExpectUpdateNamesWhatChanged(
      search, [&] { search.Retry(1, "refused", ActiveSearch::Unfinished::kLaunchRefused); });
  ExpectUpdateNamesWhatChanged(search, [&] { search.SetWaitingReason(2, "needs 8 GPUs"); });
  ExpectUpdateNamesWhatChanged(search, [&] { search.AddGpuSeconds(30, /*failed=*/false); });
  ExpectUpdateNamesWhatChanged(search, [&] {
    search.Leased(0, "workers/1");
    search.RecordResult(0, Ok(300));
  });
  ExpectUpdateNamesWhatChanged(search, [&] { search.Leased(2, "workers/1"); });
  ExpectUpdateNamesWhatChanged(search, [&] { search.Advance(kCreated); });
  ExpectUpdateNamesWhatChanged(search, [&] { search.End(v1::CANCELLED, "cancelled"); });

  v1::CreateSearchRequest adaptive = SmallSimSearch(0);
  adaptive.mutable_spec()->set_policy(v1::ADAPTIVE);
  ActiveSearch confirming = NewSearch(adaptive);
  ExpectUpdateNamesWhatChanged(confirming, [&] { RunToAConfirmation(confirming); });
}

TEST(ActiveSearchTest, AResumedSearchRequeuesWhatNoLeaseRunsAndRecountsItsOutlook) {
  ActiveSearch search = NewSearch(SmallSimSearch(3));
  search.Advance(kCreated);
  search.Leased(0, "workers/1");
  search.RecordResult(0, Ok(300));
  search.Leased(1, "workers/1");
  search.Leased(2, "workers/2");
  search.Advance(kCreated);
  search.Retry(2, "lost", ActiveSearch::Unfinished::kLeaseEnded);
  search.Advance(kCreated);
  // Candidate 2 is queued; TOP_K has nothing left to pick.
  const double remaining = search.search().counts().projected_remaining_wall_seconds();
  EXPECT_NEAR(remaining, search.Timing(2).predicted_seconds, 1e-6);
  search.TakeUpdate(kCreated);

  // Candidate 1's lease did not survive the restart: it is queued again.
  ActiveSearch resumed = ActiveSearch::Resume(7, search.search(), /*exempt_from_limits=*/true,
                                              [](int64_t /*n*/) { return false; });
  EXPECT_TRUE(resumed.exempt_from_limits());
  EXPECT_EQ(resumed.search().state(), v1::PROBING);
  EXPECT_EQ(resumed.search().candidates(1).state(), v1::CANDIDATE_QUEUED);
  EXPECT_THAT(resumed.TakeUpdate(kCreated).candidates, ElementsAre(Key(1)));
  EXPECT_TRUE(MessageDifferencer::Equals(resumed.search().memory_calibration(),
                                         search.search().memory_calibration()));
  EXPECT_FALSE(resumed.Advance(kCreated).ended);
  EXPECT_NEAR(resumed.search().counts().projected_remaining_wall_seconds(),
              search.Timing(1).predicted_seconds + search.Timing(2).predicted_seconds, 1e-6);
}

TEST(ActiveSearchTest, ASearchWhosePolicyCannotBeRebuiltEndsFailed) {
  ActiveSearch search = NewSearch(SmallSimSearch(2));
  search.Advance(kCreated);
  search.Leased(0, "workers/1");
  v1::Search stored = search.search();
  // This build plans no such configuration (the estimator changed).
  stored.mutable_candidates(0)->mutable_config()->set_micro_batch_size(12345);
  ActiveSearch resumed = ActiveSearch::Resume(7, stored, /*exempt_from_limits=*/false,
                                              [](int64_t /*n*/) { return true; });
  EXPECT_EQ(resumed.search().state(), v1::FAILED);
  EXPECT_THAT(resumed.search().stop_reason(), HasSubstr("could not resume after a restart: "));
  for (const v1::Candidate& candidate : resumed.search().candidates()) {
    EXPECT_EQ(candidate.state(), v1::CANDIDATE_SKIPPED) << candidate.name();
  }
}

}  // namespace
}  // namespace paratune
