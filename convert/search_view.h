// What a client sees of a search, the same for GetSearch and WatchSearch: the stored search
// with what is derived on reading rather than stored (the candidates ranked, where each result
// comes from, calibrated memory, the best candidate), and a watched search kept up to date
// from the stream's changes.
#ifndef PARATUNE_CONVERT_SEARCH_VIEW_H_
#define PARATUNE_CONVERT_SEARCH_VIEW_H_

#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "proto/autotuner_service.pb.h"
#include "proto/search.pb.h"

namespace paratune {

// `search` as stored (candidates in selection order, n) made into what a client sees: the
// candidates ranked (RankCandidates), each with its probe_result_source and calibrated_memory,
// and best_candidate set.
v1::Search ClientView(v1::Search search);

// Sets candidate.probe_result_source: of probe_result, or of screening_result while a
// confirmation runs (ListSearches sets it on each search's best candidate).
void SetResultSource(v1::Candidate& candidate);

// Sets every candidate's calibrated_memory from search.memory_calibration: derived on reading
// rather than stored, since a calibration that changes after a result would otherwise rewrite
// every candidate's row (and resend it to every watcher). A candidate whose own probe ran (OK)
// is SAFE: it fits, whatever the calibration says of its estimate.
void AddCalibratedMemory(v1::Search& search);

// A search followed through WatchSearch (proto/autotuner_service.proto): the first response
// holds the whole search as stored, each later one its own fields and the candidates that
// changed. Not thread-safe.
class WatchedSearch {
 public:
  // Takes the next response of the stream: the first replaces everything; a later one replaces
  // the search's fields and each candidate of the same name, and appends new ones.
  // FAILED_PRECONDITION when the first response carries changes instead of the search.
  absl::Status Apply(const v1::WatchSearchResponse& response);
  // The search as the last response left it, candidates in selection order, as stored.
  const v1::Search& stored() const { return search_; }
  // What GetSearch would have returned at the last response: ClientView(stored()).
  v1::Search View() const { return ClientView(search_); }

 private:
  bool started_ = false;
  v1::Search search_;
  // Candidate name -> its index in search_.candidates.
  absl::flat_hash_map<std::string, int> index_;
};

}  // namespace paratune

#endif  // PARATUNE_CONVERT_SEARCH_VIEW_H_
