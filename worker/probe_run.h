// What a probe backend's run of a probe gave, before the worker makes the ProbeResult of it
// (probe_result_builder.h): the raw figures, each with where it comes from. Every backend
// returns one (probe_backend.h); the builder alone derives throughput, extrapolates short
// steps, labels the figures and writes the message, so that every backend's results mean the
// same.
#ifndef PARATUNE_WORKER_PROBE_RUN_H_
#define PARATUNE_WORKER_PROBE_RUN_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "estimator/short_probe.h"
#include "proto/probe.pb.h"
#include "worker/probe/probe_phase.h"
#include "worker/probe/probe_spec.h"

namespace paratune {

// Where a run's figures come from: measured on GPUs by this worker (command, cuda), a
// measurement made elsewhere and replayed (replay), or a model's (sim). The result says so:
// ProbeResult.simulated, and the message's first words.
enum class FigureSource { kMeasured, kReplayed, kSimulated };

// How one figure, or one phase of a training step, came to be.
enum class Provenance {
  kAbsent,    // not in the figures: the configuration has none, or nothing ran or stands for it
  kMeasured,  // measured (for a replayed run: in the run it replays)
  kModelled,  // a model's value (the performance or memory model, or a sim's)
};

// One mark per ProbePhase.
using PhaseProvenance = std::array<Provenance, static_cast<int>(ProbePhase::kCount)>;

// The phases a training step of `spec`'s configuration has, all marked `mark`: the GEMMs,
// attention, elementwise work and the optimizer always; each parallelism's collectives when
// its size is above 1 (data parallelism's over data x context ranks, the group that reduces
// gradients; a mixture-of-experts model's expert collectives over ep x etp ranks), the others
// kAbsent.
PhaseProvenance StepPhases(const ProbeSpec& spec, Provenance mark);

struct ProbeRun {
  v1::ProbeOutcome outcome = v1::PROBE_OUTCOME_UNSPECIFIED;
  FigureSource source = FigureSource::kMeasured;
  // The timed steps of an OK run, seconds: one series per micro-batch count it ran, ascending,
  // each of ProbeSpec::timed_steps() steps. One series of ProbeSpec::micro_batches() is full
  // steps; otherwise the builder extrapolates the full step from the series (two or more,
  // below the full step's count). Empty for a gang member that timed no step (another
  // member's run did).
  std::vector<ShortStepSeries> timed_steps;
  // What the step times hold of each phase of the step. A data-parallel phase kModelled in a
  // run that is not simulated is added to every step: the performance model's exposed
  // data-parallel seconds (a REPLICA probe that runs one replica's step).
  PhaseProvenance phases{};
  // Peak device memory of the busiest GPU, bytes, when peak_memory is not kAbsent.
  int64_t peak_memory_bytes = 0;
  Provenance peak_memory = Provenance::kAbsent;
  // What the run would take on real GPUs, seconds, when wall_time is kModelled (sim, replay);
  // kAbsent: the worker measures it. Of it, start-up (process start, framework set-up): each
  // launch's wall time less the steps it logged (command), or the start-up modelled.
  double wall_seconds = 0;
  Provenance wall_time = Provenance::kAbsent;
  double startup_seconds = 0;
  // For people, the message's first words after the source: where the figures come from (an
  // OK run, e.g. "template \"megatron-llama\", ranks 0-7 of 8 on node 0 of 1") or why the run
  // failed.
  std::string detail;
  // Said after the peak memory, e.g. "on pipeline stage 0, 60.28 GiB estimated", and how the
  // modelled wall time was modelled, e.g. "30 s start-up and 5 steps on real GPUs".
  std::string peak_memory_note;
  std::string wall_time_note;
  // Further facts of the run for the message, each a clause, e.g. "start-up 41 s over 2
  // launches (wall time less logged steps)".
  std::vector<std::string> notes;
  // What the cuda probe measured beyond its steps (proto/probe_report.proto); the builder adds
  // the step statistics, the predicted step time and the modelled data-parallel seconds.
  std::optional<v1::ProbeMeasurements> measurements;
};

}  // namespace paratune

#endif  // PARATUNE_WORKER_PROBE_RUN_H_
