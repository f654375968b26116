// What the metrics show of one search (docs/operations.md, "Metrics"): how far it is, what
// it cost and which configuration is winning, and the bounded list of ended searches whose
// summaries stay exported after they end.
#ifndef PARATUNE_SERVER_CORE_SEARCH_SUMMARY_H_
#define PARATUNE_SERVER_CORE_SEARCH_SUMMARY_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>

#include "proto/search.pb.h"

namespace paratune {

// Ended searches whose summaries stay exported. Each exports about 11 series (one per
// per-search metric and progress kind), so 20 of them bound the ended searches' series at
// about 220 however many searches a server runs, while a dashboard still shows the best
// configuration of every search of the last day at the usual pace of a few searches a
// day; Prometheus keeps the history of those dropped.
inline constexpr size_t kEndedSearchSummariesKept = 20;

struct SearchSummary {
  // Resource name, searches/{id}.
  std::string name;
  bool ended = false;
  // Search.progress, as the server counted it for every view of the search.
  v1::SearchProgress progress;
  // SearchCounts.projected_remaining_wall_seconds and _gpu_seconds: the predicted probe
  // durations of the candidates the policy may still pick, one after another, queued and
  // running probes not included. nullopt once ended or when nothing is projected.
  std::optional<double> projected_remaining_seconds;
  std::optional<double> projected_remaining_gpu_seconds;
  // SearchCounts.gpu_seconds: wall seconds x GPUs of its finished probes.
  double gpu_seconds = 0;
  // The candidate with the best measured TFLOP/s per GPU (convert/search_progress.h's
  // BestMeasured: a leader being confirmed counts with its first result); nullopt while none
  // succeeded.
  struct Best {
    // convert/search_text.h's DescribeConfig, e.g. "dp2 tp2 pp1 cp1 mbs1".
    std::string config;
    // convert/result_source.h's ResultSource, e.g. "simulated".
    std::string source;
    double tflops_per_gpu = 0;
  };
  std::optional<Best> best;
};

SearchSummary SummarizeSearch(const v1::Search& search);

// The summaries of the kEndedSearchSummariesKept searches that ended last, oldest first.
// Thread-compatible.
class EndedSearchSummaries {
 public:
  // Drops the oldest when full.
  void Add(SearchSummary summary);
  const std::deque<SearchSummary>& summaries() const { return summaries_; }

 private:
  std::deque<SearchSummary> summaries_;
};

}  // namespace paratune

#endif  // PARATUNE_SERVER_CORE_SEARCH_SUMMARY_H_
