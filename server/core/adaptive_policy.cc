#include "server/core/adaptive_policy.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "convert/search_text.h"
#include "convert/spec_convert.h"
#include "estimator/performance_model.h"
#include "server/core/search_memory.h"

namespace paratune {
namespace {

// Standard error of the mean step time relative to it: CV / sqrt(n) over the timed steps.
double RelativeStandardError(const v1::ProbeResult& result) {
  const int n = result.step_times_seconds_size();
  if (n < 2) return 0;
  const double mean =
      std::accumulate(result.step_times_seconds().begin(), result.step_times_seconds().end(), 0.0) /
      n;
  double squares = 0;
  for (double t : result.step_times_seconds()) squares += (t - mean) * (t - mean);
  const double stddev = std::sqrt(squares / (n - 1));
  return stddev / mean / std::sqrt(static_cast<double>(n));
}

std::string Tflops(double value) { return absl::StrFormat("%.1f TFLOP/s per GPU", value); }

}  // namespace

AdaptivePolicy::AdaptivePolicy(ModelSpec model, TrainingSpec training, ClusterSpec cluster,
                               std::vector<PlannedConfig> candidates,
                               PerformanceParameters calibrated, AdaptiveOptions options)
    : model_(std::move(model)),
      training_(std::move(training)),
      cluster_(std::move(cluster)),
      candidates_(std::move(candidates)),
      calibrated_(calibrated),
      prior_relative_error_(PredictionRelativeError(model_, training_, calibrated_)),
      options_(options),
      params_(calibrated),
      entries_(candidates_.size()),
      memory_(candidates_.empty() ? 0 : candidates_.front().memory.capacity_bytes) {
  Refit();
}

void AdaptivePolicy::Refit() {
  std::vector<PerformanceObservation> observations;
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (entries_[i].state != State::kMeasured) continue;
    observations.push_back(PerformanceObservation{
        model_, training_, cluster_, candidates_[i].config, entries_[i].step_time_seconds, 1});
  }
  // Measurements were validated in Record, so the fit cannot reject them; were it to, the
  // previous parameters stay, which only makes the search probe more.
  if (absl::StatusOr<FitResult> fit =
          FitPerformanceParameters(observations, calibrated_, SearchRefitOptions());
      fit.ok()) {
    params_ = fit->params;
  }
  double squares = kPriorObservations * prior_relative_error_ * prior_relative_error_;
  // Leave-one-out needs another measurement to fit; one alone says nothing about ordering.
  if (observations.size() >= 2) {
    for (size_t held_out = 0; held_out < observations.size(); ++held_out) {
      std::vector<PerformanceObservation> others = observations;
      others.erase(others.begin() + held_out);
      absl::StatusOr<FitResult> fit =
          FitPerformanceParameters(others, calibrated_, SearchRefitOptions());
      if (!fit.ok()) continue;
      const PerformanceObservation& o = observations[held_out];
      const double predicted =
          PredictPerformance(o.model, o.training, o.cluster, o.config, fit->params)
              .step_time_seconds;
      const double residual = std::log(predicted / o.step_time_seconds);
      squares += residual * residual;
    }
    relative_error_ = std::max(prior_relative_error_,
                               std::sqrt(squares / (kPriorObservations + observations.size())));
  } else {
    relative_error_ = prior_relative_error_;
  }
  for (size_t i = 0; i < entries_.size(); ++i) {
    PerformanceEstimate predicted =
        PredictPerformance(model_, training_, cluster_, candidates_[i].config, params_);
    predicted.relative_error = relative_error_;
    entries_[i].predicted_tflops = predicted.model_tflops_per_gpu;
    entries_[i].optimistic_tflops = OptimisticTflopsPerGpu(predicted, options_.confidence_sigmas);
  }
}

int64_t AdaptivePolicy::BestMeasured() const {
  int64_t best = -1;
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (entries_[i].state != State::kMeasured) continue;
    if (best < 0 || entries_[i].measured_tflops > entries_[best].measured_tflops) {
      best = static_cast<int64_t>(i);
    }
  }
  return best;
}

std::vector<AdaptivePolicy::Pick> AdaptivePolicy::ConfirmationsDue(int64_t best,
                                                                   int64_t slots) const {
  std::vector<Pick> picks;
  const Entry& leader = entries_[best];
  std::vector<size_t> contenders;
  for (size_t i = 0; i < entries_.size(); ++i) {
    const Entry& entry = entries_[i];
    if (static_cast<int64_t>(i) == best || entry.state != State::kMeasured) continue;
    // Within twice the standard error of the difference: the short probes cannot say which
    // of the two is faster.
    const double gap = 1 - entry.measured_tflops / leader.measured_tflops;
    const double noise =
        2 * std::hypot(leader.relative_standard_error, entry.relative_standard_error);
    if (gap <= noise) contenders.push_back(i);
  }
  if (contenders.empty()) return picks;
  std::sort(contenders.begin(), contenders.end(), [&](size_t a, size_t b) {
    return entries_[a].measured_tflops > entries_[b].measured_tflops;
  });
  contenders.insert(contenders.begin(), static_cast<size_t>(best));
  int64_t budget = std::min(slots, options_.max_confirmations - confirmations_);
  for (size_t i : contenders) {
    if (budget <= 0) break;
    if (entries_[i].confirmed) continue;
    picks.push_back(
        Pick{i, ProbeKind::kConfirmation,
             absl::StrCat("confirming a leader: its short probe measured ",
                          Tflops(entries_[i].measured_tflops), ", within the noise of the best")});
    --budget;
  }
  return picks;
}

std::vector<size_t> AdaptivePolicy::UnprobedByPrediction() const {
  std::vector<size_t> unprobed;
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (entries_[i].state == State::kUnprobed) unprobed.push_back(i);
  }
  // Highest prediction first, ties by the planner's order; the optimistic bound has the same
  // order (one relative error for all), so the first that cannot win ends the contenders.
  std::stable_sort(unprobed.begin(), unprobed.end(), [&](size_t a, size_t b) {
    return entries_[a].predicted_tflops > entries_[b].predicted_tflops;
  });
  return unprobed;
}

std::vector<size_t> AdaptivePolicy::Contending() const {
  const int64_t best = BestMeasured();
  const double bar = best < 0 ? 0 : entries_[best].measured_tflops * (1 + options_.tolerance);
  std::vector<size_t> contenders;
  for (size_t i : UnprobedByPrediction()) {
    if (best >= 0 && entries_[i].optimistic_tflops <= bar) break;
    contenders.push_back(i);
  }
  return contenders;
}

AdaptivePolicy::Decision AdaptivePolicy::Next() {
  Decision decision;
  const int64_t best = BestMeasured();
  const std::vector<size_t> unprobed = UnprobedByPrediction();
  const std::vector<size_t> contending = Contending();
  int64_t slots = options_.max_in_flight - in_flight_;
  for (size_t k = 0; k < contending.size() && slots > 0; ++k, --slots) {
    const Entry& entry = entries_[contending[k]];
    decision.picks.push_back(Pick{
        contending[k], ProbeKind::kScreening,
        absl::StrCat("predicted ", Tflops(entry.predicted_tflops), " (optimistic ",
                     absl::StrFormat("%.1f", entry.optimistic_tflops),
                     best < 0
                         ? ")"
                         : absl::StrFormat(" > best measured %.1f x %.2f)",
                                           entries_[best].measured_tflops, 1 + options_.tolerance)),
        entry.optimistic_tflops});
  }
  // Leaders are confirmed once no unprobed candidate can overtake them and every screening
  // probe is back, so the confirmed set is final.
  if (contending.empty() && best >= 0 && in_flight_ == 0 && slots > 0) {
    decision.picks = ConfirmationsDue(best, slots);
  }
  for (const Pick& pick : decision.picks) MarkInFlight(pick.candidate, pick.kind);
  if (!decision.picks.empty() || in_flight_ > 0) return decision;

  if (best < 0) {
    decision.stop_reason =
        absl::StrCat("no candidate could be measured: every probe failed",
                     !skipped_for_memory_.empty()
                         ? absl::StrCat(" and ", skipped_for_memory_.size(),
                                        " candidates were skipped as ", MemorySkipReason())
                         : "");
    return decision;
  }
  const std::string best_text =
      absl::StrCat(DescribeConfig(ParallelConfigToProto(candidates_[best].config)), " at ",
                   Tflops(entries_[best].measured_tflops));
  if (unprobed.empty()) {
    decision.stop_reason =
        absl::StrCat("every candidate worth probing was probed; best ", best_text);
  } else {
    const Entry& runner_up = entries_[unprobed.front()];
    decision.stop_reason = absl::StrFormat(
        "no unprobed candidate can beat the best measured, %s, by more than %.0f%%: the "
        "highest optimistic prediction left is %.1f (%s, %.1f sigma of the search's %.1f%% "
        "model error); %d candidates not probed",
        best_text, 100 * options_.tolerance, runner_up.optimistic_tflops,
        DescribeConfig(ParallelConfigToProto(candidates_[unprobed.front()].config)),
        options_.confidence_sigmas, 100 * relative_error_, unprobed.size());
  }
  if (!skipped_for_memory_.empty()) {
    absl::StrAppend(&*decision.stop_reason, "; ", skipped_for_memory_.size(), " skipped as ",
                    MemorySkipReason());
  }
  return decision;
}

void AdaptivePolicy::MarkInFlight(size_t index, ProbeKind kind) {
  Entry& entry = entries_[index];
  entry.state = State::kInFlight;
  if (kind == ProbeKind::kConfirmation && !entry.confirmed) {
    entry.confirmed = true;
    ++confirmations_;
  }
  ++in_flight_;
}

absl::Status AdaptivePolicy::Record(size_t index, ProbeKind kind, const v1::ProbeResult& result) {
  if (index >= entries_.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("candidate index (", index, ") must be below ", entries_.size()));
  }
  if (result.outcome() == v1::PROBE_OK && !(result.mean_step_time_seconds() > 0)) {
    return absl::InvalidArgumentError(absl::StrCat("result.mean_step_time_seconds (",
                                                   result.mean_step_time_seconds(),
                                                   ") of an OK probe must be > 0"));
  }
  Entry& entry = entries_[index];
  if (entry.state == State::kInFlight) --in_flight_;
  if (kind == ProbeKind::kScreening) {
    AddProbeMemory(result, candidates_[index].memory.peak_bytes, memory_);
  }
  if (result.outcome() == v1::PROBE_OK) {
    entry.state = State::kMeasured;
    entry.measured_tflops = result.model_tflops_per_gpu();
    entry.step_time_seconds = result.mean_step_time_seconds();
    entry.relative_standard_error = RelativeStandardError(result);
    Refit();
  } else if (kind == ProbeKind::kConfirmation && entry.measured_tflops > 0) {
    // The screening measurement stands; the failed confirmation taught nothing about speed.
    entry.state = State::kMeasured;
  } else {
    entry.state = State::kFailed;
  }
  SkipWhatDoesNotFit();
  return absl::OkStatus();
}

std::string AdaptivePolicy::MemorySkipReason() const {
  return absl::StrFormat(
      "out of memory by the memory estimate calibrated on %d measured peak%s (x %.3f) and %d "
      "probe%s that ran out",
      memory_.measurements(), memory_.measurements() == 1 ? "" : "s", memory_.ratio(),
      memory_.out_of_memory(), memory_.out_of_memory() == 1 ? "" : "s");
}

void AdaptivePolicy::SkipWhatDoesNotFit() {
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (entries_[i].state == State::kUnprobed &&
        memory_.Calibrate(candidates_[i].memory.peak_bytes).verdict ==
            MemoryVerdict::kOutOfMemory) {
      entries_[i].state = State::kSkipped;
      skipped_for_memory_.push_back(i);
    }
  }
}

}  // namespace paratune
