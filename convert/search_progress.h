// How far a search is, in the terms every view of it uses (the CLI's progress line, live view
// and `list`, the server's per-search metrics): candidates probed, those that could still win, and
// the total, which is fixed once the search is planned so that progress never reads "1 of 3", "2 of
// 4".
#ifndef PARATUNE_CONVERT_SEARCH_PROGRESS_H_
#define PARATUNE_CONVERT_SEARCH_PROGRESS_H_

#include <cstdint>
#include <optional>

#include "proto/search.pb.h"

namespace paratune {

struct SearchProgress {
  // Candidates with a result (a leader being confirmed counts: it has its screening result),
  // and of those, measured and not.
  int64_t probed = 0;
  int64_t succeeded = 0;
  int64_t failed = 0;
  // Candidates not measured yet that may still beat the best measured: those queued or
  // running, and those the policy may still pick (SearchCounts.still_contending; ADAPTIVE:
  // whose optimistic prediction beats the best measured by more than the tolerance). 0 once
  // the search ended.
  int64_t could_still_win = 0;
  // Candidates the search may probe at all: those memory lets it probe
  // (SearchCounts.memory_safe).
  int64_t total = 0;
};

// The result that stands for `candidate`'s speed: its probe's once probed, its first
// (screening) probe's while a longer probe confirms it (ADAPTIVE); nullptr before either.
const v1::ProbeResult* LatestResult(const v1::Candidate& candidate);

// Counted from search.candidates; a search listed without them (ListSearches) has `probed`
// from its counts (probes less confirmations) and no queued or running ones.
SearchProgress ProgressOf(const v1::Search& search);

// The TFLOP/s per GPU that ranks `candidate` for BestMeasured: its LatestResult's when that
// succeeded, nullopt otherwise.
std::optional<double> MeasuredTflops(const v1::Candidate& candidate);

// The candidate whose LatestResult is the fastest successful one (the first of equals);
// nullptr when none succeeded (or the candidates were not sent).
const v1::Candidate* BestMeasured(const v1::Search& search);

}  // namespace paratune

#endif  // PARATUNE_CONVERT_SEARCH_PROGRESS_H_
