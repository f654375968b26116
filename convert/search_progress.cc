#include "convert/search_progress.h"

#include "convert/search_state.h"

namespace paratune {

const v1::ProbeResult* LatestResult(const v1::Candidate& candidate) {
  if (candidate.state() == v1::CANDIDATE_PROBED) return &candidate.probe_result();
  const bool in_flight =
      candidate.state() == v1::CANDIDATE_QUEUED || candidate.state() == v1::CANDIDATE_RUNNING;
  if (in_flight && candidate.has_screening_result()) return &candidate.screening_result();
  return nullptr;
}

SearchProgress ProgressOf(const v1::Search& search) {
  const v1::SearchCounts& counts = search.counts();
  // An ended search runs nothing more, whatever state its candidates were left in.
  const bool ended = SearchEnded(search.state());
  SearchProgress progress;
  progress.total = counts.memory_safe();
  progress.could_still_win = ended ? 0 : counts.still_contending();
  if (search.candidates().empty()) {
    progress.probed = counts.probed() - counts.confirmations();
    return progress;
  }
  for (const v1::Candidate& candidate : search.candidates()) {
    if (!ended &&
        (candidate.state() == v1::CANDIDATE_QUEUED || candidate.state() == v1::CANDIDATE_RUNNING)) {
      ++progress.could_still_win;
    }
    const v1::ProbeResult* result = LatestResult(candidate);
    if (result == nullptr) continue;
    ++progress.probed;
    ++(result->outcome() == v1::PROBE_OK ? progress.succeeded : progress.failed);
  }
  return progress;
}

std::optional<double> MeasuredTflops(const v1::Candidate& candidate) {
  const v1::ProbeResult* result = LatestResult(candidate);
  if (result == nullptr || result->outcome() != v1::PROBE_OK) return std::nullopt;
  return result->model_tflops_per_gpu();
}

const v1::Candidate* BestMeasured(const v1::Search& search) {
  const v1::Candidate* best = nullptr;
  double best_tflops = 0;
  for (const auto& candidate : search.candidates()) {
    const std::optional<double> tflops = MeasuredTflops(candidate);
    if (!tflops.has_value()) continue;
    if (best == nullptr || *tflops > best_tflops) {
      best = &candidate;
      best_tflops = *tflops;
    }
  }
  return best;
}

}  // namespace paratune
