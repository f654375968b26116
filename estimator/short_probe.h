// The short-probe protocol (docs/short_probes.md): a probe keeps a candidate's shape exactly
// (dp, tp, pp, cp, micro-batch size, vp, recompute, the layers of each stage) but runs steps
// of fewer micro-batches than the global batch needs, at two counts, and extrapolates the
// full step from them.
//
// Why it works: with the 1F1B schedule (interleaved or not; Narayanan et al. 2021, §2.2) a
// step of m micro-batches takes
//     T(m) = m x slot + fill_drain + fixed,
// where `slot` is the steady-state time of one micro-batch on the slowest stage (its compute,
// TP and CP collectives, and pipeline sends), fill_drain = (pp - 1) / vp slots of pipeline
// fill and drain, and `fixed` the per-step costs that do not grow with m (the data-parallel
// gradient reduction and parameter gather that is not hidden, the optimizer). Two counts give
// the slope (slot) and the intercept (fill_drain + fixed) from measurements, so the full step
// T(M) is extrapolated rather than assumed. The counts are multiples of pp (interleaving
// needs it) and at least 2 pp, so every stage holds as many micro-batches' activations as in
// the full step: the probe's peak memory is the full step's.
//
// Where it breaks (docs/short_probes.md measures it): costs that are not linear in m, e.g. a
// data-parallel reduction overlapped with the backward pass of the last micro-batches, whose
// window is the same for any m >= pp, is linear; one overlapped with the whole step is not,
// and short steps expose more of it than the full step does.
#ifndef PARATUNE_ESTIMATOR_SHORT_PROBE_H_
#define PARATUNE_ESTIMATOR_SHORT_PROBE_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "estimator/parallel_config.h"
#include "estimator/performance_model.h"
#include "estimator/training_spec.h"

namespace paratune {

// Seconds a probe is predicted to spend before its first step: process start, NCCL
// communicators, CUDA and cuBLAS initialisation (docs/short_probes.md). The sim models it too.
inline constexpr double kProbeStartupSeconds = 30;

// The short steps of one probe.
struct ShortProbePlan {
  // Micro-batches per full step (global batch / (dp x micro-batch size)).
  int64_t full_micro_batches = 0;
  // Micro-batches per short step, ascending: 2 pp and 4 pp. Empty when the full step has no
  // more than 4 pp micro-batches: the probe then runs full steps.
  std::vector<int64_t> micro_batch_counts;
};

// The short steps for `config` training `training` (a valid pair).
ShortProbePlan PlanShortProbe(const ParallelConfig& config, const TrainingSpec& training);

// The step time the performance model predicts for a step of `micro_batches` micro-batches,
// from its prediction `full` of the full step (PredictPerformance of the same configuration):
// the per-micro-batch terms (compute, TP, CP, EP, PP) scaled by micro_batches /
// full_micro_batches, the bubble and the per-step terms (DP, optimizer) unchanged.
double PredictedStepSeconds(const PerformanceEstimate& full, int64_t full_micro_batches,
                            int64_t micro_batches);

// How a backend runs a probe's steps; the defaults are the server's for the sim and the cuda
// probe (proto/search.proto, ProbeSettings).
struct ProbeSteps {
  int64_t warmup_steps = 2;                       // >= 0, after each launch's start-up
  int64_t timed_steps = 5;                        // >= 1, at each micro-batch count
  double startup_seconds = kProbeStartupSeconds;  // per launch; finite, >= 0
  // Whether probes run the short steps of their ShortProbePlan; false for a backend that runs
  // full steps only (replay).
  bool short_steps = true;
  // Whether each micro-batch count is a launch of its own, with its own start-up and warm-up
  // (the command backend: a training framework runs one global batch per launch); otherwise
  // one launch warms up at the first count and runs every count (the sim, the cuda probe).
  bool launch_per_count = false;
};

// Wall seconds a probe is predicted to take: each launch's `steps.startup_seconds` and
// `steps.warmup_steps` steps, and `steps.timed_steps` steps at each count of `plan` (full
// steps when it has none or without `steps.short_steps`).
double PredictedProbeSeconds(const PerformanceEstimate& full, const ShortProbePlan& plan,
                             const ProbeSteps& steps);

// The steps a probe of the candidate predicted `full` runs as `steps` say: `plan`'s short
// steps, or full steps (no counts) for a backend that runs no short steps or where the short
// steps are not predicted to take less wall time than full steps (a launch per count whose
// start-ups outweigh what the shorter steps save, as for deep pipelines whose short steps are
// a large share of the full step).
ShortProbePlan PlanProbeSteps(const ShortProbePlan& plan, const PerformanceEstimate& full,
                              const ProbeSteps& steps);

// Measured short steps at one micro-batch count.
struct ShortStepSeries {
  int64_t micro_batches = 0;
  std::vector<double> step_times_seconds;
};

// The full step extrapolated from short steps.
struct StepExtrapolation {
  // Fitted seconds per micro-batch (the slope) and per step (the intercept: fill and drain
  // plus the fixed costs).
  double slot_seconds = 0;
  double intercept_seconds = 0;
  // The intercept split: (pp - 1) / vp slots of fill and drain, the rest fixed costs.
  double fill_drain_seconds = 0;
  double fixed_seconds = 0;
  // One extrapolated full step per timed step index i, from the i-th step of every series
  // (so their spread is the measurement's), and their mean.
  std::vector<double> full_step_seconds;
  double mean_full_step_seconds = 0;
};

// Least-squares fit of T(m) = intercept + m x slot to `series` (two or more distinct counts,
// each with the same number, >= 1, of positive step times) and its value at
// full_micro_batches. INVALID_ARGUMENT naming the series for fewer than two counts, unequal
// lengths or a non-positive time; OUT_OF_RANGE when the fit's slope is not positive (the
// steps did not grow with the micro-batches: the measurement cannot be extrapolated).
absl::StatusOr<StepExtrapolation> ExtrapolateFullStep(const std::vector<ShortStepSeries>& series,
                                                      int64_t full_micro_batches,
                                                      int64_t pipeline_parallel,
                                                      int64_t virtual_pipeline);

}  // namespace paratune

#endif  // PARATUNE_ESTIMATOR_SHORT_PROBE_H_
