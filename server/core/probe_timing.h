// How a candidate's probe is run and how long it may take (docs/short_probes.md): the short
// steps of the short-probe protocol (estimator/short_probe.h), the duration the performance
// model predicts for them on real GPUs, and the deadline derived from it.
#ifndef PARATUNE_SERVER_CORE_PROBE_TIMING_H_
#define PARATUNE_SERVER_CORE_PROBE_TIMING_H_

#include <cstdint>
#include <vector>

#include "estimator/planner.h"
#include "estimator/training_spec.h"
#include "proto/search.pb.h"

namespace paratune {

// A derived deadline is this many times the predicted duration, and at least the minimum:
// the prediction's error (docs/estimator.md) is well under 2x, and start-up varies.
inline constexpr double kDeadlineFactor = 3;
inline constexpr double kMinDeadlineSeconds = 120;

struct ProbeTiming {
  // ProbeAssignment.timed_steps.
  int64_t timed_steps = 0;
  // ProbeAssignment.micro_batch_counts: empty for full steps (PlanProbeSteps: a backend
  // that runs no short steps, a global batch of few micro-batches, or launches whose
  // start-ups outweigh what short steps save).
  std::vector<int64_t> micro_batch_counts;
  // Predicted wall seconds on real GPUs: each launch's start-up (spec.probe.startup_seconds)
  // and warm-up, and the timed steps.
  double predicted_seconds = 0;
  // spec.probe.deadline_seconds when set, else kDeadlineFactor x predicted_seconds, at least
  // kMinDeadlineSeconds.
  double deadline_seconds = 0;
};

// The timing of a probe of `planned` (a candidate of the search's plan, with its predicted
// performance) training `training`, with the search's probe settings `probe` (normalized:
// ValidateCreateSearchRequest), running `timed_steps` timed steps. Pure.
ProbeTiming TimeProbe(const PlannedConfig& planned, const TrainingSpec& training,
                      const v1::ProbeSettings& probe, int64_t timed_steps);

}  // namespace paratune

#endif  // PARATUNE_SERVER_CORE_PROBE_TIMING_H_
