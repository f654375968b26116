#include "server/core/search_summary.h"

#include <string>

#include "convert/search_progress.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

v1::Candidate Probed(v1::ProbeOutcome outcome, double tflops, int64_t tensor_parallel) {
  v1::Candidate candidate;
  candidate.set_state(v1::CANDIDATE_PROBED);
  candidate.mutable_config()->set_data_parallel(8 / tensor_parallel);
  candidate.mutable_config()->set_tensor_parallel(tensor_parallel);
  candidate.mutable_config()->set_pipeline_parallel(1);
  candidate.mutable_config()->set_context_parallel(1);
  candidate.mutable_config()->set_micro_batch_size(1);
  v1::ProbeResult& result = *candidate.mutable_probe_result();
  result.set_backend("sim");
  result.set_simulated(true);
  result.set_outcome(outcome);
  result.set_model_tflops_per_gpu(tflops);
  return candidate;
}

v1::Search ProbingSearch() {
  v1::Search search;
  search.set_name("searches/7");
  search.set_state(v1::PROBING);
  v1::SearchCounts& counts = *search.mutable_counts();
  counts.set_memory_safe(40);
  counts.set_probed(4);
  counts.set_confirmations(1);
  counts.set_still_contending(5);
  counts.set_gpu_seconds(7200);
  counts.set_projected_remaining_wall_seconds(600);
  counts.set_projected_remaining_gpu_seconds(4800);
  *search.add_candidates() = Probed(v1::PROBE_OK, 310, 1);
  *search.add_candidates() = Probed(v1::PROBE_OK, 420, 2);
  *search.add_candidates() = Probed(v1::PROBE_CRASH, 900, 4);
  search.add_candidates()->set_state(v1::CANDIDATE_QUEUED);
  search.add_candidates()->set_state(v1::CANDIDATE_RUNNING);
  search.add_candidates()->set_state(v1::CANDIDATE_SKIPPED);
  // As the server keeps it.
  *search.mutable_progress() = ProgressOf(search);
  return search;
}

TEST(SummarizeSearchTest, CountsProgressCostAndTheBestSuccessfulCandidate) {
  const SearchSummary summary = SummarizeSearch(ProbingSearch());
  EXPECT_EQ(summary.name, "searches/7");
  EXPECT_FALSE(summary.ended);
  // The search's progress as the server sent it.
  EXPECT_EQ(summary.progress.probed(), 3);
  EXPECT_EQ(summary.progress.could_still_win(), 7);
  EXPECT_EQ(summary.progress.candidates(), 40);
  EXPECT_EQ(summary.gpu_seconds, 7200);
  EXPECT_EQ(summary.projected_remaining_seconds, 600);
  EXPECT_EQ(summary.projected_remaining_gpu_seconds, 4800);
  ASSERT_TRUE(summary.best.has_value());
  EXPECT_EQ(summary.best->config, "dp4 tp2 pp1 cp1 mbs1");
  EXPECT_EQ(summary.best->source, "simulated");
  EXPECT_EQ(summary.best->tflops_per_gpu, 420);
}

TEST(SummarizeSearchTest, AnEndedSearchHasNothingLeftToWinAndNoProjection) {
  v1::Search search = ProbingSearch();
  search.set_state(v1::SUCCEEDED);
  search.mutable_counts()->set_still_contending(0);
  const SearchSummary summary = SummarizeSearch(search);
  EXPECT_TRUE(summary.ended);
  EXPECT_FALSE(summary.projected_remaining_seconds.has_value());
  EXPECT_FALSE(summary.projected_remaining_gpu_seconds.has_value());
  EXPECT_TRUE(summary.best.has_value());
}

TEST(SummarizeSearchTest, NoBestUntilAProbeSucceeded) {
  v1::Search search;
  search.set_state(v1::PLANNING);
  *search.add_candidates() = Probed(v1::PROBE_OUT_OF_MEMORY, 0, 1);
  const SearchSummary summary = SummarizeSearch(search);
  EXPECT_FALSE(summary.best.has_value());
  EXPECT_FALSE(summary.projected_remaining_seconds.has_value());
}

TEST(EndedSearchSummariesTest, KeepsTheMostRecentOnes) {
  EndedSearchSummaries ended;
  const size_t added = kEndedSearchSummariesKept + 3;
  for (size_t i = 0; i < added; ++i) {
    SearchSummary summary;
    summary.name = "searches/" + std::to_string(i);
    ended.Add(summary);
  }
  ASSERT_EQ(ended.summaries().size(), kEndedSearchSummariesKept);
  EXPECT_EQ(ended.summaries().front().name, "searches/3");
  EXPECT_EQ(ended.summaries().back().name, "searches/" + std::to_string(added - 1));
}

}  // namespace
}  // namespace paratune
