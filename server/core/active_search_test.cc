#include "server/core/active_search.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "server/core/test_requests.h"

namespace paratune {
namespace {

using ::google::protobuf::util::MessageDifferencer;
using ::testing::HasSubstr;

const absl::Time kCreated = absl::FromUnixSeconds(1'000'000);

ActiveSearch NewSearch(v1::CreateSearchRequest request) {
  absl::StatusOr<ValidatedSearchRequest> validated = ValidateCreateSearchRequest(request);
  EXPECT_TRUE(validated.ok()) << validated.status();
  absl::StatusOr<PlannedSearch> planned = PlanSearch(validated->spec);
  EXPECT_TRUE(planned.ok()) << planned.status();
  return ActiveSearch(7, request, *validated, *std::move(planned), kCreated);
}

v1::ProbeResult Ok(double tflops) {
  v1::ProbeResult result;
  result.set_outcome(v1::PROBE_OK);
  result.add_step_times_seconds(1);
  result.set_mean_step_time_seconds(1);
  result.set_model_tflops_per_gpu(tflops);
  return result;
}

TEST(ActiveSearchTest, ANewSearchProbesOrFailsWithTheReason) {
  const ActiveSearch search = NewSearch(SmallSimSearch(2));
  EXPECT_EQ(search.search().name(), "searches/7");
  EXPECT_EQ(search.search().state(), v1::PROBING);
  EXPECT_EQ(search.world_size(), 8);
  EXPECT_GT(search.search().counts().memory_safe(), 2);

  v1::CreateSearchRequest too_long = SmallSimSearch(2);
  too_long.mutable_spec()->mutable_training()->set_seq_len(1 << 20);
  const ActiveSearch failed = NewSearch(too_long);
  EXPECT_FALSE(failed.has_candidates());
  EXPECT_EQ(failed.search().state(), v1::FAILED);
  EXPECT_THAT(failed.search().stop_reason(), HasSubstr("no memory-safe configuration"));
}

TEST(ActiveSearchTest, PicksBecomeQueuedCandidatesAndResultsAreCounted) {
  ActiveSearch search = NewSearch(SmallSimSearch(2));
  const SearchPolicy::Decision decision = search.Next();
  ASSERT_EQ(decision.picks.size(), 2u);
  EXPECT_EQ(search.AddPick(decision.picks[0]), 0);
  EXPECT_EQ(search.search().candidates(0).selection_note(), decision.picks[0].note);
  EXPECT_EQ(search.AddPick(decision.picks[1]), 1);
  EXPECT_EQ(search.search().candidates(1).name(), "searches/7/candidates/1");
  EXPECT_EQ(search.search().candidates(1).state(), v1::CANDIDATE_QUEUED);
  EXPECT_EQ(search.search().counts().selected(), 2);
  EXPECT_TRUE(search.HasPending());

  EXPECT_FALSE(search.RecordResult(0, Ok(300)).screening_result_stands);
  v1::ProbeResult oom;
  oom.set_outcome(v1::PROBE_OUT_OF_MEMORY);
  const ActiveSearch::Recorded recorded = search.RecordResult(1, oom);
  const v1::SearchCounts& counts = search.search().counts();
  EXPECT_EQ(counts.probed(), 2);
  EXPECT_EQ(counts.succeeded(), 1);
  EXPECT_EQ(counts.failed_by_outcome().at("PROBE_OUT_OF_MEMORY"), 1);
  EXPECT_FALSE(search.HasPending());
  EXPECT_FALSE(recorded.screening_result_stands);
  // TOP_K rules nothing out for memory.
  EXPECT_TRUE(recorded.ruled_out.empty());
}

TEST(ActiveSearchTest, AFailedConfirmationLeavesTheScreeningResultStanding) {
  ActiveSearch search = NewSearch(SmallSimSearch(1));
  const SearchPolicy::Pick pick = search.Next().picks[0];
  search.AddPick(pick);
  search.RecordResult(0, Ok(300));
  search.AddPick({pick.candidate, SearchPolicy::ProbeKind::kConfirmation, "close leader"});
  EXPECT_EQ(search.search().candidates(0).selection_note(), "close leader");
  EXPECT_TRUE(search.search().candidates(0).has_screening_result());
  v1::ProbeResult crash;
  crash.set_outcome(v1::PROBE_CRASH);
  EXPECT_TRUE(search.RecordResult(0, crash).screening_result_stands);
  EXPECT_EQ(search.search().candidates(0).probe_result().model_tflops_per_gpu(), 300);
  EXPECT_EQ(search.search().counts().confirmations(), 1);
}

TEST(ActiveSearchTest, ACandidateKeepsTheBoundItWasChosenOnThroughItsConfirmation) {
  v1::CreateSearchRequest request = SmallSimSearch(1);
  request.mutable_spec()->set_policy(v1::ADAPTIVE);
  ActiveSearch search = NewSearch(request);
  const SearchPolicy::Pick pick = search.Next().picks[0];
  ASSERT_GT(pick.optimistic_tflops_per_gpu, 0);
  search.AddPick(pick);
  EXPECT_EQ(search.search().candidates(0).optimistic_tflops_per_gpu(),
            pick.optimistic_tflops_per_gpu);
  EXPECT_EQ(search.search().candidates(0).selection_note(), pick.note);
  search.RecordResult(0, Ok(300));
  search.AddPick({pick.candidate, SearchPolicy::ProbeKind::kConfirmation, "close leader"});
  EXPECT_EQ(search.search().candidates(0).optimistic_tflops_per_gpu(),
            pick.optimistic_tflops_per_gpu);

  ActiveSearch top_k = NewSearch(SmallSimSearch(1));
  top_k.AddPick(top_k.Next().picks[0]);
  EXPECT_EQ(top_k.search().candidates(0).optimistic_tflops_per_gpu(), 0);
}

TEST(ActiveSearchTest, OutlookCountsWhatIsLeftAndWhatItWouldCost) {
  ActiveSearch top_k = NewSearch(SmallSimSearch(2));
  for (const SearchPolicy::Pick& pick : top_k.Next().picks) top_k.AddPick(pick);
  top_k.UpdateOutlook();
  const v1::SearchCounts& counts = top_k.search().counts();
  // Both are queued: nothing left to pick, two probes of at least their 30 s start-up left.
  EXPECT_EQ(counts.still_contending(), 0);
  EXPECT_GT(counts.projected_remaining_wall_seconds(), 2 * 30);
  EXPECT_DOUBLE_EQ(counts.projected_remaining_gpu_seconds(),
                   8 * counts.projected_remaining_wall_seconds());
  top_k.RecordResult(0, Ok(300));
  top_k.RecordResult(1, Ok(250));
  top_k.UpdateOutlook();
  EXPECT_EQ(top_k.search().counts().projected_remaining_wall_seconds(), 0);

  v1::CreateSearchRequest request = SmallSimSearch(2);
  request.mutable_spec()->set_policy(v1::ADAPTIVE);
  ActiveSearch adaptive = NewSearch(request);
  adaptive.UpdateOutlook();
  // Before any measurement every candidate may still win.
  EXPECT_EQ(adaptive.search().counts().still_contending(),
            adaptive.search().counts().memory_safe());
  adaptive.End(v1::CANCELLED, "cancelled");
  EXPECT_EQ(adaptive.search().counts().still_contending(), 0);
}

TEST(ActiveSearchTest, RefusalsCountOnlyWhileTheyRepeat) {
  ActiveSearch search = NewSearch(SmallSimSearch(1));
  search.AddPick(search.Next().picks[0]);
  EXPECT_EQ(search.NoteRefusal("gres"), 1);
  EXPECT_EQ(search.NoteRefusal("gres"), 2);
  EXPECT_EQ(search.NoteRefusal("partition"), 1);
  EXPECT_EQ(search.NoteRefusal("partition"), 2);
  search.Leased(0, "workers/1");
  EXPECT_EQ(search.NoteRefusal("partition"), 1);
}

TEST(ActiveSearchTest, UseCountsAttemptsGpuSecondsAndTime) {
  ActiveSearch search = NewSearch(SmallSimSearch(2));
  for (const SearchPolicy::Pick& pick : search.Next().picks) search.AddPick(pick);
  search.Leased(0, "workers/1");
  search.Requeue(0);
  search.CountAttempt(0);
  search.AddGpuSeconds(40, /*failed=*/false);
  search.AddGpuSeconds(10, /*failed=*/true);
  const BudgetUse use = search.Use(kCreated + absl::Minutes(3));
  EXPECT_EQ(use.probes_started, 2);
  EXPECT_EQ(use.gpu_seconds, 50);
  EXPECT_EQ(search.search().counts().failed_gpu_seconds(), 10);
  EXPECT_EQ(use.elapsed, absl::Minutes(3));
  search.SkipPending(/*include_running=*/false);
  EXPECT_EQ(search.search().candidates(1).state(), v1::CANDIDATE_SKIPPED);
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
// and exactly the candidates that changed, as they are now; and the tallies to agree with a
// count of the candidates.
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

  const auto& candidates = search.search().candidates();
  EXPECT_EQ(search.HasPending(), std::any_of(candidates.begin(), candidates.end(), Pending));
  int64_t attempts = 0;
  for (const v1::Candidate& candidate : candidates) attempts += candidate.attempts();
  EXPECT_EQ(search.Use(kCreated).probes_started, attempts);
}

TEST(ActiveSearchTest, EachUpdateNamesExactlyTheCandidatesThatChanged) {
  v1::CreateSearchRequest request = SmallSimSearch(3);
  ActiveSearch search = NewSearch(request);
  std::vector<SearchPolicy::Pick> picks;
  ExpectUpdateNamesWhatChanged(search, [&] {
    picks = search.Next().picks;
    for (const SearchPolicy::Pick& pick : picks) search.AddPick(pick);
  });
  ExpectUpdateNamesWhatChanged(search, [&] { search.Leased(1, "workers/1"); });
  ExpectUpdateNamesWhatChanged(search, [&] { search.Requeue(1); });
  ExpectUpdateNamesWhatChanged(search, [&] { search.CountAttempt(1); });
  ExpectUpdateNamesWhatChanged(search, [&] { search.SetWaitingReason(2, "needs 8 GPUs"); });
  ExpectUpdateNamesWhatChanged(search, [&] { search.AddGpuSeconds(30, /*failed=*/false); });
  ExpectUpdateNamesWhatChanged(search, [&] {
    search.Leased(0, "workers/1");
    search.RecordResult(0, Ok(300));
  });
  ExpectUpdateNamesWhatChanged(search, [&] {
    search.AddPick({picks[0].candidate, SearchPolicy::ProbeKind::kConfirmation, "leader"});
    search.Leased(0, "workers/2");
  });
  ExpectUpdateNamesWhatChanged(search, [&] {
    v1::ProbeResult crash;
    crash.set_outcome(v1::PROBE_CRASH);
    search.RecordResult(0, crash);
  });
  ExpectUpdateNamesWhatChanged(search, [&] { search.Leased(2, "workers/1"); });
  ExpectUpdateNamesWhatChanged(
      search, [&] { search.RequeueUnleased([](int64_t /*n*/) { return false; }); });
  ExpectUpdateNamesWhatChanged(search, [&] { search.UpdateOutlook(); });
  ExpectUpdateNamesWhatChanged(search, [&] { search.SkipPending(/*include_running=*/false); });
  ExpectUpdateNamesWhatChanged(search, [&] { search.End(v1::CANCELLED, "cancelled"); });
}

TEST(ActiveSearchTest, TheOutlookOfQueuedProbesIsKeptAsTheyChangeAndRecountedOnResume) {
  ActiveSearch search = NewSearch(SmallSimSearch(3));
  for (const SearchPolicy::Pick& pick : search.Next().picks) search.AddPick(pick);
  search.Leased(0, "workers/1");
  search.RecordResult(0, Ok(300));
  search.Leased(1, "workers/1");
  search.UpdateOutlook();
  // Only candidate 2 is queued; TOP_K has nothing left to pick.
  const double remaining = search.search().counts().projected_remaining_wall_seconds();
  EXPECT_NEAR(remaining, search.Timing(2).predicted_seconds, 1e-6);

  search.Requeue(1);
  search.UpdateOutlook();
  EXPECT_NEAR(search.search().counts().projected_remaining_wall_seconds(),
              search.Timing(1).predicted_seconds + search.Timing(2).predicted_seconds, 1e-6);

  ActiveSearch resumed(7, search.search());
  ASSERT_TRUE(resumed.Resume().ok());
  EXPECT_TRUE(resumed.HasPending());
  EXPECT_EQ(resumed.Use(kCreated).probes_started, 2);
  resumed.UpdateOutlook();
  EXPECT_EQ(resumed.search().counts().projected_remaining_wall_seconds(),
            search.search().counts().projected_remaining_wall_seconds());
  EXPECT_TRUE(MessageDifferencer::Equals(resumed.search().memory_calibration(),
                                         search.search().memory_calibration()));
}

}  // namespace
}  // namespace paratune
