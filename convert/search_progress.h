// How far a search is (proto/search.proto, SearchProgress), counted in one place for every view
// of it: the server keeps Search.progress up to date with these functions as candidates change
// (server/core/active_search.h), and the CLI, the console and the metrics show what it sent.
// Also which result stands for a candidate's speed, and the best one.
#ifndef PARATUNE_CONVERT_SEARCH_PROGRESS_H_
#define PARATUNE_CONVERT_SEARCH_PROGRESS_H_

#include <cstdint>
#include <optional>
#include <string>

#include "proto/search.pb.h"

namespace paratune {

// The result that stands for `candidate`'s speed: its probe's once probed, its first
// (screening) probe's while a longer probe confirms it (ADAPTIVE); nullptr before either.
const v1::ProbeResult* LatestResult(const v1::Candidate& candidate);

// The attempts of `candidate`'s current (or last) probe: its confirmation's alone once one
// was queued (Candidate.screening_attempts), else all of them. A confirmation is not a retry.
int64_t ProbeAttempts(const v1::Candidate& candidate);

// Adds `sign` (1, or -1 to take it out again) times `candidate`'s share to the fields of
// `progress` that candidates make up: probed, ok and failed (by its LatestResult),
// confirming, running, waiting. A caller that keeps a sum as candidates change takes a
// candidate's share out before changing it and adds it back after.
void CountCandidate(const v1::Candidate& candidate, int64_t sign, v1::SearchProgress& progress);

// Whether `candidate` waits for workers that no set of live workers can provide: queued with
// a waiting_reason. SearchProgress.waiting_reason is the first such candidate's.
bool CannotStart(const v1::Candidate& candidate);

// `search`'s progress from its candidates' shares summed (`candidates_share`, CountCandidate)
// and the waiting_reason of the first candidate that CannotStart ("" when none): the rest comes
// from search.counts and search.state, and could_still_win is 0 once the search ended.
v1::SearchProgress CompleteProgress(const v1::Search& search, v1::SearchProgress candidates_share,
                                    std::string waiting_reason);

// Counted from search.candidates as CompleteProgress says: what the server stores in
// Search.progress, for a search stored before it did (server/store/store_schema.h) and for
// tests.
v1::SearchProgress ProgressOf(const v1::Search& search);

// The TFLOP/s per GPU that ranks `candidate` for BestMeasured: its LatestResult's when that
// succeeded, nullopt otherwise.
std::optional<double> MeasuredTflops(const v1::Candidate& candidate);

// The candidate whose LatestResult is the fastest successful one (the first of equals);
// nullptr when none succeeded (or the candidates were not sent).
const v1::Candidate* BestMeasured(const v1::Search& search);

}  // namespace paratune

#endif  // PARATUNE_CONVERT_SEARCH_PROGRESS_H_
