// What a search costs before it runs (issue 11, docs/short_probes.md "What a search costs"):
// probes, wall seconds per probe, GPU-hours and wall hours for each policy, next to one full
// training job per candidate as NVIDIA NeMo's AutoConfigurator runs it.
//
// Every figure is a projection from the performance model's predictions, and these
// assumptions hold throughout:
// - A probe runs at full scope: it holds every GPU of the cluster (`gpus`) for its whole wall
//   time, start-up included.
// - Probes run one after another on one cluster-sized fleet, so the wall hours are the sum of
//   the probes' wall seconds; running them side by side on more GPUs shortens the wall time,
//   never the GPU-hours.
// - A probe's wall time is PredictedProbeSeconds (estimator/short_probe.h): start-up, the
//   warm-up steps and the timed steps of the short-probe protocol (or full steps, for a
//   backend that runs no short ones; a start-up and warm-up per count for one that launches
//   each count afresh), as the model predicts them.
// - ADAPTIVE's count assumes every measurement equals its prediction. Then its refit leaves the
//   model as it is, the best measured is the best predicted, and it stops once no unprobed
//   candidate's optimistic prediction beats the best by more than its tolerance
//   (docs/scheduler.md, "ADAPTIVE"). Real measurements differ from predictions, so a real
//   search probes more or fewer: the count is an expectation, not a bound. Confirmations are
//   added as a range (none to max_confirmations): with measurements equal to predictions
//   none would be due, with real noise up to max_confirmations are.
#ifndef PARATUNE_ESTIMATOR_SEARCH_COST_H_
#define PARATUNE_ESTIMATOR_SEARCH_COST_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "estimator/performance_model.h"
#include "estimator/planner.h"
#include "estimator/short_probe.h"
#include "estimator/training_spec.h"

namespace paratune {

// NVIDIA NeMo 2.0's AutoConfigurator runs each candidate as a training job of
// max_steps_per_run steps (trainer max_steps) under a job time limit of max_minutes_per_run
// minutes, by default 50 steps and 30 minutes (nemo/collections/llm/tools/auto_configurator/
// runner.py, AutoConfigurator.__init__; core/base_config.py, get_trainer and get_run_config;
// its llama3_8b and llama3_70b search configs say the same). The NeMo Framework Launcher's
// older GPT-3 search configs use 50 steps and 10 to 20 minutes.
inline constexpr int64_t kNemoStepsPerJob = 50;
inline constexpr double kNemoJobLimitSeconds = 30 * 60;

// The search whose cost is projected; the defaults are the server's (proto/search.proto).
struct SearchCostOptions {
  ProbeSteps steps;
  // TOP_K's k, >= 1.
  int64_t top_k = 8;
  // ADAPTIVE (AdaptiveSettings): tolerance in (0, 1], confidence_sigmas finite and > 0,
  // max_in_flight >= 1, max_confirmations >= 0, confirmation_steps_factor >= 1.
  double tolerance = 0.02;
  double confidence_sigmas = 2;
  int64_t max_in_flight = 2;
  int64_t max_confirmations = 2;
  int64_t confirmation_steps_factor = 4;
  // One full job per candidate: steps per job (>= 1) and the job's time limit, seconds
  // (finite, > 0).
  int64_t full_job_steps = kNemoStepsPerJob;
  double full_job_limit_seconds = kNemoJobLimitSeconds;
};

// INVALID_ARGUMENT naming the field and value when an option is outside the range its comment
// gives.
absl::Status CheckSearchCostOptions(const SearchCostOptions& options);

// One candidate as the projection sees it: its prediction and its short steps.
struct CostCandidate {
  PerformanceEstimate predicted;
  ShortProbePlan short_probe;
};

// plan.candidates in the plan's (predicted) order, each with PlanShortProbe for `training`,
// the training run the plan was made for.
std::vector<CostCandidate> CostCandidates(const Plan& plan, const TrainingSpec& training);

// Runs of one kind (probes or jobs), one after another.
struct RunSetCost {
  int64_t runs = 0;
  // Sum of the runs' predicted wall seconds, and the longest run's.
  double total_seconds = 0;
  double longest_seconds = 0;
};

// total_seconds / runs; 0 without runs.
double MeanSeconds(const RunSetCost& cost);
// total_seconds x gpus / 3600: every run holds `gpus` GPUs.
double GpuHours(const RunSetCost& cost, int64_t gpus);
// total_seconds / 3600: the runs one after another.
double WallHours(const RunSetCost& cost);
// The sum of two sets run one after the other.
RunSetCost Combine(const RunSetCost& a, const RunSetCost& b);

// Wall seconds of one probe of `candidate` run as `steps` say: PredictedProbeSeconds of the
// steps it runs (PlanProbeSteps).
double ProbeSeconds(const CostCandidate& candidate, const ProbeSteps& steps);

// Wall seconds of one full training job of `predicted`'s configuration: start-up and `steps`
// full steps, cut at `limit_seconds` (the job's time limit, start-up included).
double FullJobSeconds(const PerformanceEstimate& predicted, int64_t steps, double limit_seconds,
                      double startup_seconds);

// Probes of the first `count` candidates (all of them when there are fewer), run as `steps`
// say.
RunSetCost FirstProbes(const std::vector<CostCandidate>& candidates, int64_t count,
                       const ProbeSteps& steps);

// How many candidates ADAPTIVE probes if every measurement equals its prediction: those whose
// optimistic prediction, OptimisticTflopsPerGpu(predicted, confidence_sigmas), beats the best
// prediction x (1 + tolerance) (its stop rule), and never fewer than the first
// min(max_in_flight, candidates) it starts before any result is in. `candidates` are in
// predicted order, best first, so those counted are the first ones. 0 without candidates.
int64_t AdaptiveExpectedProbes(const std::vector<CostCandidate>& candidates, double tolerance,
                               double confidence_sigmas, int64_t max_in_flight);

// The projection for each policy.
struct SearchCostProjection {
  // GPUs every probe and job holds: the cluster's.
  int64_t gpus = 0;
  // ADAPTIVE's expected screening probes (AdaptiveExpectedProbes), then its confirmations at
  // most: the best min(max_confirmations, expected) of those probed again with
  // confirmation_steps_factor x the timed steps.
  RunSetCost adaptive;
  RunSetCost adaptive_confirmations;
  RunSetCost top_k;       // the first top_k candidates
  RunSetCost exhaustive;  // every candidate
  RunSetCost full_jobs;   // one full job per candidate (FullJobSeconds)
  // The best predicted candidate (0 without candidates): its full step, its probe, and the
  // same probe with full steps instead of short ones, for comparison.
  double best_step_seconds = 0;
  double best_probe_seconds = 0;
  double best_full_step_probe_seconds = 0;
};

// The projection of a search over `candidates` (predicted order, best first) on a cluster of
// `gpus` GPUs. INVALID_ARGUMENT as CheckSearchCostOptions, or when gpus < 1.
absl::StatusOr<SearchCostProjection> ProjectSearchCost(const std::vector<CostCandidate>& candidates,
                                                       int64_t gpus,
                                                       const SearchCostOptions& options);

}  // namespace paratune

#endif  // PARATUNE_ESTIMATOR_SEARCH_COST_H_
