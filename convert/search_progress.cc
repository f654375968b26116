#include "convert/search_progress.h"

#include <utility>

#include "convert/search_state.h"

namespace paratune {

const v1::ProbeResult* LatestResult(const v1::Candidate& candidate) {
  if (candidate.state() == v1::CANDIDATE_PROBED) return &candidate.probe_result();
  const bool in_flight =
      candidate.state() == v1::CANDIDATE_QUEUED || candidate.state() == v1::CANDIDATE_RUNNING;
  if (in_flight && candidate.has_screening_result()) return &candidate.screening_result();
  return nullptr;
}

int64_t ProbeAttempts(const v1::Candidate& candidate) {
  return candidate.attempts() - candidate.screening_attempts();
}

void CountCandidate(const v1::Candidate& candidate, int64_t sign, v1::SearchProgress& progress) {
  if (const v1::ProbeResult* result = LatestResult(candidate); result != nullptr) {
    progress.set_probed(progress.probed() + sign);
    if (result->outcome() == v1::PROBE_OK) {
      progress.set_ok(progress.ok() + sign);
    } else {
      progress.set_failed(progress.failed() + sign);
    }
  }
  const bool running = candidate.state() == v1::CANDIDATE_RUNNING;
  const bool waiting = candidate.state() == v1::CANDIDATE_QUEUED;
  if (running) progress.set_running(progress.running() + sign);
  if (waiting) progress.set_waiting(progress.waiting() + sign);
  if ((running || waiting) && candidate.has_screening_result()) {
    progress.set_confirming(progress.confirming() + sign);
  }
}

bool CannotStart(const v1::Candidate& candidate) {
  return candidate.state() == v1::CANDIDATE_QUEUED && !candidate.waiting_reason().empty();
}

v1::SearchProgress CompleteProgress(const v1::Search& search, v1::SearchProgress candidates_share,
                                    std::string waiting_reason) {
  const v1::SearchCounts& counts = search.counts();
  v1::SearchProgress progress = std::move(candidates_share);
  progress.set_candidates(counts.memory_safe());
  progress.set_probes(counts.probed());
  // An ended search runs nothing more, whatever state its candidates were left in.
  progress.set_could_still_win(SearchEnded(search.state())
                                   ? 0
                                   : counts.still_contending() + progress.running() +
                                         progress.waiting());
  progress.set_waiting_reason(std::move(waiting_reason));
  return progress;
}

v1::SearchProgress ProgressOf(const v1::Search& search) {
  v1::SearchProgress share;
  std::string waiting_reason;
  for (const v1::Candidate& candidate : search.candidates()) {
    CountCandidate(candidate, 1, share);
    if (waiting_reason.empty() && CannotStart(candidate)) {
      waiting_reason = candidate.waiting_reason();
    }
  }
  return CompleteProgress(search, std::move(share), std::move(waiting_reason));
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
