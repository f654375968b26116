#include "convert/search_view.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "convert/candidate_ranking.h"
#include "convert/estimate_convert.h"
#include "convert/result_source.h"
#include "convert/search_progress.h"
#include "estimator/memory_calibration.h"

namespace paratune {

void SetResultSource(v1::Candidate& candidate) {
  if (candidate.has_probe_result()) {
    candidate.set_probe_result_source(ResultSource(candidate.probe_result()));
  } else if (candidate.has_screening_result()) {
    candidate.set_probe_result_source(ResultSource(candidate.screening_result()));
  }
}

v1::Search ClientView(v1::Search search) {
  RankCandidates(*search.mutable_candidates());
  for (v1::Candidate& candidate : *search.mutable_candidates()) SetResultSource(candidate);
  if (const v1::Candidate* best = BestMeasured(search); best != nullptr) {
    *search.mutable_best_candidate() = *best;
  }
  AddCalibratedMemory(search);
  return search;
}

void AddCalibratedMemory(v1::Search& search) {
  const v1::MemoryCalibrationSummary& summary = search.memory_calibration();
  const double ratio = summary.ratio() > 0 ? summary.ratio() : 1;
  const double relative_error = summary.relative_error() > 0
                                    ? summary.relative_error()
                                    : MemoryCalibration::kPriorRelativeError;
  const double smallest_out_of_memory = summary.smallest_out_of_memory_bytes() > 0
                                            ? summary.smallest_out_of_memory_bytes()
                                            : std::numeric_limits<double>::infinity();
  for (v1::Candidate& candidate : *search.mutable_candidates()) {
    CalibratedMemory calibrated =
        CalibrateEstimate(static_cast<double>(candidate.memory().peak_bytes()),
                          static_cast<double>(candidate.memory().capacity_bytes()), ratio,
                          relative_error, smallest_out_of_memory);
    // A configuration whose own probe ran is known to fit, whatever the estimate of one that
    // ran out says: the calibration's bound is for configurations not run yet.
    if (candidate.has_screening_result() || (candidate.state() == v1::CANDIDATE_PROBED &&
                                             candidate.probe_result().outcome() == v1::PROBE_OK)) {
      calibrated.verdict = MemoryVerdict::kSafe;
    }
    v1::CalibratedMemory& proto = *candidate.mutable_calibrated_memory();
    proto.set_peak_bytes(std::llround(calibrated.peak_bytes));
    proto.set_low_bytes(std::llround(calibrated.low_bytes));
    proto.set_high_bytes(std::llround(calibrated.high_bytes));
    proto.set_verdict(VerdictToProto(calibrated.verdict));
  }
}

absl::Status WatchedSearch::Apply(const v1::WatchSearchResponse& response) {
  if (!started_) {
    if (response.changed_candidates_size() > 0) {
      return absl::FailedPreconditionError(
          "the watch's first response carries changed candidates instead of the whole search");
    }
    search_ = response.search();
    for (int i = 0; i < search_.candidates_size(); ++i) index_[search_.candidates(i).name()] = i;
    started_ = true;
    return absl::OkStatus();
  }
  // The search's own fields replace ours; its candidates stay ours.
  google::protobuf::RepeatedPtrField<v1::Candidate> candidates;
  candidates.Swap(search_.mutable_candidates());
  search_ = response.search();
  search_.mutable_candidates()->Swap(&candidates);
  for (const v1::Candidate& changed : response.changed_candidates()) {
    auto [at, added] = index_.try_emplace(changed.name(), search_.candidates_size());
    if (added) {
      *search_.add_candidates() = changed;
    } else {
      *search_.mutable_candidates(at->second) = changed;
    }
  }
  return absl::OkStatus();
}

}  // namespace paratune
