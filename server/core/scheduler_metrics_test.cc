#include "server/core/scheduler_metrics.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "metrics/text_format.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(SchedulerMetricsTest, ExportsTheStatsInBaseUnitsWithEveryStateAtZeroToo) {
  SchedulerStats stats;
  stats.active_searches[v1::PROBING] = 2;
  stats.totals.searches_created = 5;
  stats.totals.searches_ended[v1::SUCCEEDED] = 3;
  stats.totals.candidates_enumerated = 100;
  stats.totals.candidates_selected = 8;
  stats.totals.candidates_pruned[kPrunedOutOfMemory] = 30;
  stats.totals.probe_results[{"sim", v1::PROBE_OUT_OF_MEMORY}] = 4;
  stats.queued_probes = 6;
  stats.running_probes = 1;
  stats.workers[v1::WORKER_BUSY] = 1;
  stats.worker_gpus[v1::WORKER_BUSY] = 8;
  SearchSummary search;
  search.name = "searches/4";
  search.progress.set_probed(3);
  search.progress.set_ok(2);
  search.progress.set_failed(1);
  search.progress.set_could_still_win(2);
  search.progress.set_waiting(1);
  search.progress.set_candidates(40);
  search.projected_remaining_seconds = 600;
  search.projected_remaining_gpu_seconds = 4800;
  search.gpu_seconds = 7200;
  search.best = SearchSummary::Best{"dp4 tp2 pp1 cp1 mbs1", "simulated", 412.5};
  stats.searches.push_back(search);
  SearchSummary ended;
  ended.name = "searches/3";
  ended.ended = true;
  stats.searches.push_back(ended);
  const SchedulerMetrics metrics([&] { return stats; });
  ASSERT_EQ(metrics.Describe().size(), metrics.Collect().size());

  const std::string text = metrics::FormatText(metrics.Collect());
  for (const char* line : {
           "paratune_searches{state=\"pending\"} 0\n",
           "paratune_searches{state=\"probing\"} 2\n",
           "paratune_searches_created_total 5\n",
           "paratune_searches_ended_total{state=\"succeeded\"} 3\n",
           "paratune_searches_ended_total{state=\"cancelled\"} 0\n",
           "paratune_candidates_enumerated_total 100\n",
           "paratune_candidates_selected_total 8\n",
           "paratune_candidates_pruned_total{reason=\"out_of_memory\"} 30\n",
           "paratune_candidates_pruned_total{reason=\"not_selected\"} 0\n",
           "paratune_probe_results_total{backend=\"sim\",outcome=\"out_of_memory\"} 4\n",
           "paratune_probes_queued 6\n",
           "paratune_probes_running 1\n",
           "paratune_workers{state=\"busy\"} 1\n",
           "paratune_workers{state=\"lost\"} 0\n",
           "paratune_gpus{state=\"busy\"} 8\n",
           "paratune_search_candidates{search=\"searches/4\",progress=\"probed\"} 3\n",
           "paratune_search_candidates{search=\"searches/4\",progress=\"ok\"} 2\n",
           "paratune_search_candidates{search=\"searches/4\",progress=\"failed\"} 1\n",
           "paratune_search_candidates{search=\"searches/4\",progress=\"could_still_win\"} 2\n",
           "paratune_search_candidates{search=\"searches/4\",progress=\"waiting\"} 1\n",
           "paratune_search_candidates{search=\"searches/4\",progress=\"total\"} 40\n",
           "paratune_search_projected_remaining_seconds{search=\"searches/4\"} 600\n",
           "paratune_search_projected_remaining_gpu_seconds{search=\"searches/4\"} 4800\n",
           "paratune_search_probe_gpu_seconds_total{search=\"searches/4\"} 7200\n",
           "paratune_search_best_flops_per_second_per_gpu{search=\"searches/4\","
           "source=\"simulated\"} 4.125e+14\n",
           "paratune_search_best_info{search=\"searches/4\",config=\"dp4 tp2 pp1 cp1 mbs1\","
           "source=\"simulated\"} 1\n",
           "paratune_search_candidates{search=\"searches/3\",progress=\"probed\"} 0\n",
       }) {
    EXPECT_THAT(text, HasSubstr(line));
  }
  // An ended search without a projection or a success exports neither.
  EXPECT_THAT(text,
              Not(HasSubstr("paratune_search_projected_remaining_seconds{search=\"searches/3\"}")));
  EXPECT_THAT(text, Not(HasSubstr("paratune_search_best_info{search=\"searches/3\"")));
}

TEST(SchedulerMetricsTest, ReadsTheStatsAtEveryCollection) {
  int64_t queued = 1;
  const SchedulerMetrics metrics([&] {
    SchedulerStats stats;
    stats.queued_probes = queued;
    return stats;
  });
  EXPECT_THAT(metrics::FormatText(metrics.Collect()), HasSubstr("paratune_probes_queued 1\n"));
  queued = 7;
  EXPECT_THAT(metrics::FormatText(metrics.Collect()), HasSubstr("paratune_probes_queued 7\n"));
}

}  // namespace
}  // namespace paratune
