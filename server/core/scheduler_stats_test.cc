#include "server/core/scheduler_stats.h"

#include <memory>
#include <string>
#include <utility>

#include "common/fake_clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/core/scheduler.h"
#include "server/core/test_requests.h"
#include "server/store/sqlite_search_store.h"

namespace paratune {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

v1::Candidate Probed(v1::ProbeOutcome outcome, double tflops) {
  v1::Candidate candidate;
  candidate.set_state(v1::CANDIDATE_PROBED);
  candidate.mutable_probe_result()->set_backend("sim");
  candidate.mutable_probe_result()->set_outcome(outcome);
  candidate.mutable_probe_result()->set_model_tflops_per_gpu(tflops);
  return candidate;
}

v1::Search SearchWithCounts(v1::SearchState state, bool include_risky) {
  v1::Search search;
  search.set_name("searches/7");
  search.set_state(state);
  search.mutable_spec()->mutable_space()->set_memory_policy(include_risky ? v1::MEASURE_RISKY
                                                                          : v1::SAFE_ONLY);
  v1::SearchCounts& counts = *search.mutable_counts();
  counts.set_enumerated(100);
  counts.set_valid(60);
  counts.set_memory_out_of_memory(20);
  counts.set_memory_risky(10);
  counts.set_memory_safe(include_risky ? 40 : 30);
  counts.set_selected(8);
  return search;
}

TEST(AddSearchTotalsTest, SplitsEnumeratedConfigurationsByWhyTheyWereNotProbed) {
  for (bool include_risky : {false, true}) {
    SearchTotals totals;
    AddSearchTotals(SearchWithCounts(v1::SUCCEEDED, include_risky), totals);
    int64_t accounted = totals.candidates_selected;
    for (const auto& [reason, count] : totals.candidates_pruned) accounted += count;
    EXPECT_EQ(accounted, totals.candidates_enumerated) << include_risky;
    EXPECT_EQ(totals.candidates_pruned[kPrunedInvalid], 40);
    EXPECT_EQ(totals.candidates_pruned[kPrunedOutOfMemory], 20);
    EXPECT_EQ(totals.candidates_pruned[kPrunedRisky], include_risky ? 0 : 10);
    EXPECT_EQ(totals.candidates_pruned[kPrunedNotSelected], include_risky ? 32 : 22);
  }
}

// A running ADAPTIVE search selects more as it goes: counting its unselected candidates then
// would make a counter go down.
TEST(AddSearchTotalsTest, NotSelectedCountsOnlyOnceTheSearchEnded) {
  v1::Search search = SearchWithCounts(v1::PROBING, false);
  search.mutable_counts()->set_gpu_seconds(7200);
  SearchTotals running;
  AddSearchTotals(search, running);
  EXPECT_EQ(running.candidates_pruned[kPrunedNotSelected], 0);
  EXPECT_DOUBLE_EQ(running.probe_gpu_seconds, 7200);
  search.set_state(v1::SUCCEEDED);
  search.mutable_counts()->set_selected(12);
  SearchTotals ended;
  AddSearchTotals(search, ended);
  EXPECT_EQ(ended.candidates_pruned[kPrunedNotSelected], 18);
  EXPECT_GT(ended.candidates_selected, running.candidates_selected);
}

TEST(AddSearchTotalsTest, CountsRecordedResultsAndTheFinalState) {
  v1::Search search = SearchWithCounts(v1::SUCCEEDED, false);
  *search.add_candidates() = Probed(v1::PROBE_OK, 400);
  *search.add_candidates() = Probed(v1::PROBE_OUT_OF_MEMORY, 0);
  search.add_candidates()->set_state(v1::CANDIDATE_SKIPPED);
  SearchTotals totals;
  AddSearchTotals(search, totals);
  AddSearchTotals(search, totals);
  EXPECT_EQ(totals.searches_created, 2);
  EXPECT_THAT(totals.searches_ended, ElementsAre(Pair(v1::SUCCEEDED, 2)));
  EXPECT_THAT(totals.probe_results, ElementsAre(Pair(Pair("sim", v1::PROBE_OK), 2),
                                                Pair(Pair("sim", v1::PROBE_OUT_OF_MEMORY), 2)));
}

TEST(AddActiveSearchTest, AddsItsStateAndSummary) {
  v1::Search search = SearchWithCounts(v1::PROBING, false);
  *search.add_candidates() = Probed(v1::PROBE_OK, 310);
  *search.add_candidates() = Probed(v1::PROBE_OK, 420);
  *search.add_candidates() = Probed(v1::PROBE_CRASH, 900);
  SchedulerStats stats;
  AddActiveSearch(search, stats);
  EXPECT_THAT(stats.active_searches, ElementsAre(Pair(v1::PROBING, 1)));
  ASSERT_EQ(stats.searches.size(), 1u);
  EXPECT_EQ(stats.searches[0].name, "searches/7");
  EXPECT_EQ(stats.searches[0].best->tflops_per_gpu, 420);
  EXPECT_TRUE(stats.totals.searches_ended.empty());
}

// Scheduler::Stats over a search's life: the totals never go down when it ends.
TEST(SchedulerStatsTest, FollowsASearchThroughTheScheduler) {
  FakeClock clock;
  Scheduler::Options options;
  options.clock = &clock;
  absl::StatusOr<std::unique_ptr<Scheduler>> created =
      Scheduler::Create(std::move(options), *SqliteSearchStore::Open(":memory:"));
  ASSERT_TRUE(created.ok()) << created.status();
  Scheduler& scheduler = **created;

  absl::StatusOr<v1::RegisterWorkerResponse> registered =
      scheduler.fleet().RegisterWorker(Worker(8));
  ASSERT_TRUE(registered.ok()) << registered.status();

  absl::StatusOr<v1::Search> search = scheduler.CreateSearch(SmallSimSearch(1));
  ASSERT_TRUE(search.ok()) << search.status();

  SchedulerStats stats = scheduler.Stats();
  EXPECT_EQ(stats.queued_probes, 1);
  EXPECT_THAT(stats.active_searches, ElementsAre(Pair(v1::PROBING, 1)));
  EXPECT_THAT(stats.workers, ElementsAre(Pair(v1::WORKER_IDLE, 1)));
  EXPECT_THAT(stats.worker_gpus, ElementsAre(Pair(v1::WORKER_IDLE, 8)));
  ASSERT_EQ(stats.searches.size(), 1u);
  EXPECT_FALSE(stats.searches[0].ended);
  EXPECT_EQ(stats.searches[0].progress.could_still_win(), 1);
  const int64_t enumerated = stats.totals.candidates_enumerated;
  EXPECT_GT(enumerated, 0);

  v1::AcquireProbeRequest acquire;
  acquire.set_worker(registered->name());
  absl::StatusOr<std::optional<v1::ProbeAssignment>> acquired =
      scheduler.fleet().TryAcquireProbe(acquire);
  ASSERT_TRUE(acquired.ok() && acquired->has_value());
  const std::optional<v1::ProbeAssignment>& assignment = *acquired;
  stats = scheduler.Stats();
  EXPECT_EQ(stats.queued_probes, 0);
  EXPECT_EQ(stats.running_probes, 1);
  EXPECT_THAT(stats.workers, ElementsAre(Pair(v1::WORKER_BUSY, 1)));

  v1::ReportProbeRequest report;
  report.set_worker(registered->name());
  report.set_probe(assignment->name());
  v1::ProbeResult& result = *report.mutable_result();
  result.set_outcome(v1::PROBE_OK);
  result.set_backend("sim");
  result.set_simulated(true);
  result.add_step_times_seconds(1.0);
  result.set_mean_step_time_seconds(1.0);
  result.set_model_tflops_per_gpu(350);
  ASSERT_TRUE(scheduler.fleet().ReportProbe(report).ok());

  stats = scheduler.Stats();
  EXPECT_TRUE(stats.active_searches.empty());
  // The ended search stays summarized, with its result.
  ASSERT_EQ(stats.searches.size(), 1u);
  EXPECT_EQ(stats.searches[0].name, search->name());
  EXPECT_TRUE(stats.searches[0].ended);
  EXPECT_EQ(stats.searches[0].progress.probed(), 1);
  EXPECT_EQ(stats.searches[0].best->tflops_per_gpu, 350);
  EXPECT_EQ(stats.searches[0].best->source, "simulated");
  EXPECT_EQ(stats.running_probes, 0);
  EXPECT_EQ(stats.totals.searches_created, 1);
  EXPECT_THAT(stats.totals.searches_ended, ElementsAre(Pair(v1::SUCCEEDED, 1)));
  EXPECT_THAT(stats.totals.probe_results, ElementsAre(Pair(Pair("sim", v1::PROBE_OK), 1)));
  EXPECT_EQ(stats.totals.candidates_enumerated, enumerated);
  EXPECT_EQ(stats.totals.candidates_selected, 1);
}

}  // namespace
}  // namespace paratune
