#include "server/core/scheduler_stats.h"

#include "convert/search_state.h"
#include "convert/spec_convert.h"

namespace paratune {

void AddSearchTotals(const v1::Search& search, SearchTotals& totals) {
  ++totals.searches_created;
  if (SearchEnded(search.state())) ++totals.searches_ended[search.state()];
  const v1::SearchCounts& counts = search.counts();
  const bool include_risky = ProbesRiskyConfigurations(search.spec().space());
  totals.candidates_enumerated += counts.enumerated();
  totals.candidates_selected += counts.selected();
  totals.candidates_pruned[kPrunedInvalid] += counts.enumerated() - counts.valid();
  totals.candidates_pruned[kPrunedOutOfMemory] += counts.memory_out_of_memory();
  // memory_safe already includes the risky ones when the search probes them.
  totals.candidates_pruned[kPrunedRisky] += include_risky ? 0 : counts.memory_risky();
  if (SearchEnded(search.state())) {
    totals.candidates_pruned[kPrunedNotSelected] += counts.memory_safe() - counts.selected();
  }
  totals.probe_gpu_seconds += counts.gpu_seconds();
  for (const v1::Candidate& candidate : search.candidates()) {
    if (candidate.state() != v1::CANDIDATE_PROBED) continue;
    const v1::ProbeResult& result = candidate.probe_result();
    ++totals.probe_results[{result.backend(), result.outcome()}];
  }
}

void AddActiveSearch(const v1::Search& search, SchedulerStats& stats) {
  AddSearchTotals(search, stats.totals);
  ++stats.active_searches[search.state()];
  stats.searches.push_back(SummarizeSearch(search));
}

}  // namespace paratune
