#include "estimator/search_cost.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace paratune {
namespace {

absl::Status AtLeast(const char* field, int64_t value, int64_t low) {
  if (value < low) {
    return absl::InvalidArgumentError(absl::StrCat(field, " (", value, ") must be >= ", low));
  }
  return absl::OkStatus();
}

// Finite and >= 0 (`positive` false) or > 0 (`positive` true).
absl::Status Finite(const char* field, double value, bool positive) {
  if (!std::isfinite(value) || value < 0 || (positive && value == 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " (", value, ") must be finite and ", positive ? "> 0" : ">= 0"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckSearchCostOptions(const SearchCostOptions& options) {
  if (!(options.tolerance > 0 && options.tolerance <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("tolerance (", options.tolerance, ") must be in (0, 1]"));
  }
  for (absl::Status status :
       {AtLeast("warmup_steps", options.steps.warmup_steps, 0),
        AtLeast("timed_steps", options.steps.timed_steps, 1),
        Finite("startup_seconds", options.steps.startup_seconds, false),
        AtLeast("top_k", options.top_k, 1),
        Finite("confidence_sigmas", options.confidence_sigmas, true),
        AtLeast("max_in_flight", options.max_in_flight, 1),
        AtLeast("max_confirmations", options.max_confirmations, 0),
        AtLeast("confirmation_steps_factor", options.confirmation_steps_factor, 1),
        AtLeast("full_job_steps", options.full_job_steps, 1),
        Finite("full_job_limit_seconds", options.full_job_limit_seconds, true)}) {
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

std::vector<CostCandidate> CostCandidates(const Plan& plan, const TrainingSpec& training) {
  std::vector<CostCandidate> candidates;
  candidates.reserve(plan.candidates.size());
  for (const PlannedConfig& planned : plan.candidates) {
    candidates.push_back({planned.predicted, PlanShortProbe(planned.config, training)});
  }
  return candidates;
}

double MeanSeconds(const RunSetCost& cost) {
  return cost.runs == 0 ? 0 : cost.total_seconds / static_cast<double>(cost.runs);
}

double GpuHours(const RunSetCost& cost, int64_t gpus) {
  return cost.total_seconds * static_cast<double>(gpus) / 3600;
}

double WallHours(const RunSetCost& cost) { return cost.total_seconds / 3600; }

RunSetCost Combine(const RunSetCost& a, const RunSetCost& b) {
  return {a.runs + b.runs, a.total_seconds + b.total_seconds,
          std::max(a.longest_seconds, b.longest_seconds)};
}

double ProbeSeconds(const CostCandidate& candidate, const ProbeSteps& steps) {
  return PredictedProbeSeconds(candidate.predicted,
                               PlanProbeSteps(candidate.short_probe, candidate.predicted, steps),
                               steps);
}

double FullJobSeconds(const PerformanceEstimate& predicted, int64_t steps, double limit_seconds,
                      double startup_seconds) {
  return std::min(limit_seconds,
                  startup_seconds + static_cast<double>(steps) * predicted.step_time_seconds);
}

RunSetCost FirstProbes(const std::vector<CostCandidate>& candidates, int64_t count,
                       const ProbeSteps& steps) {
  RunSetCost cost;
  const int64_t runs = std::min<int64_t>(count, static_cast<int64_t>(candidates.size()));
  for (int64_t i = 0; i < runs; ++i) {
    const double seconds = ProbeSeconds(candidates[i], steps);
    cost = Combine(cost, {1, seconds, seconds});
  }
  return cost;
}

int64_t AdaptiveExpectedProbes(const std::vector<CostCandidate>& candidates, double tolerance,
                               double confidence_sigmas, int64_t max_in_flight) {
  if (candidates.empty()) return 0;
  const double bar = candidates.front().predicted.model_tflops_per_gpu * (1 + tolerance);
  // The same comparison as the policy's: an optimistic bound strictly above the bar.
  const int64_t contenders =
      std::count_if(candidates.begin(), candidates.end(), [&](const CostCandidate& c) {
        return OptimisticTflopsPerGpu(c.predicted, confidence_sigmas) > bar;
      });
  const int64_t started_blind =
      std::min<int64_t>(max_in_flight, static_cast<int64_t>(candidates.size()));
  return std::max(contenders, started_blind);
}

absl::StatusOr<SearchCostProjection> ProjectSearchCost(const std::vector<CostCandidate>& candidates,
                                                       int64_t gpus,
                                                       const SearchCostOptions& options) {
  if (absl::Status status = CheckSearchCostOptions(options); !status.ok()) return status;
  if (gpus < 1) {
    return absl::InvalidArgumentError(absl::StrCat("gpus (", gpus, ") must be >= 1"));
  }
  const ProbeSteps& steps = options.steps;
  SearchCostProjection projection;
  projection.gpus = gpus;
  const int64_t expected = AdaptiveExpectedProbes(candidates, options.tolerance,
                                                  options.confidence_sigmas, options.max_in_flight);
  ProbeSteps confirmation_steps = steps;
  confirmation_steps.timed_steps *= options.confirmation_steps_factor;
  projection.adaptive = FirstProbes(candidates, expected, steps);
  projection.adaptive_confirmations =
      FirstProbes(candidates, std::min(options.max_confirmations, expected), confirmation_steps);
  projection.top_k = FirstProbes(candidates, options.top_k, steps);
  projection.exhaustive = FirstProbes(candidates, static_cast<int64_t>(candidates.size()), steps);
  if (!candidates.empty()) {
    const CostCandidate& best = candidates.front();
    projection.best_step_seconds = best.predicted.step_time_seconds;
    projection.best_probe_seconds = ProbeSeconds(best, steps);
    ProbeSteps full_steps = steps;
    full_steps.short_steps = false;
    full_steps.launch_per_count = false;
    projection.best_full_step_probe_seconds = ProbeSeconds(best, full_steps);
  }
  for (const CostCandidate& candidate : candidates) {
    const double seconds = FullJobSeconds(candidate.predicted, options.full_job_steps,
                                          options.full_job_limit_seconds, steps.startup_seconds);
    projection.full_jobs = Combine(projection.full_jobs, {1, seconds, seconds});
  }
  return projection;
}

}  // namespace paratune
