#include "server/core/search_summary.h"

#include <utility>

#include "convert/result_source.h"
#include "convert/search_progress.h"
#include "convert/search_state.h"
#include "convert/search_text.h"

namespace paratune {

SearchSummary SummarizeSearch(const v1::Search& search) {
  const v1::SearchCounts& counts = search.counts();
  SearchSummary summary;
  summary.name = search.name();
  summary.ended = SearchEnded(search.state());
  summary.progress = search.progress();
  summary.gpu_seconds = counts.gpu_seconds();
  if (!summary.ended && counts.projected_remaining_wall_seconds() > 0) {
    summary.projected_remaining_seconds = counts.projected_remaining_wall_seconds();
    summary.projected_remaining_gpu_seconds = counts.projected_remaining_gpu_seconds();
  }
  if (const v1::Candidate* best = BestMeasured(search); best != nullptr) {
    const v1::ProbeResult& result = *LatestResult(*best);
    summary.best = SearchSummary::Best{DescribeConfig(best->config()), ResultSource(result),
                                       result.model_tflops_per_gpu()};
  }
  return summary;
}

void EndedSearchSummaries::Add(SearchSummary summary) {
  summaries_.push_back(std::move(summary));
  if (summaries_.size() > kEndedSearchSummariesKept) summaries_.pop_front();
}

}  // namespace paratune
