// The `replay` backend (DESIGN.md §8): answers a probe from measured runs (replay_table.h)
// instead of running it, so that searches can be developed and checked against real
// measurements on machines without GPUs. A configuration nobody measured is reported as
// not measured, never invented.
#ifndef PARATUNE_WORKER_REPLAY_BACKEND_H_
#define PARATUNE_WORKER_REPLAY_BACKEND_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "proto/worker_config.pb.h"
#include "worker/probe_backend.h"
#include "worker/replay_table.h"

namespace paratune {

// Outcomes, for a probe whose model, GPU, nodes, training run and configuration equal a
// measured run's (the first in table order when several releases measured it; the message
// names the others):
//   - the run completed: PROBE_OK, every one of the timed_steps full steps the run's mean
//     step time (the sources report one mean per run, so the values do not vary: their
//     spread is not a measurement); peak memory when the source reports it;
//   - the run ran out of memory: PROBE_OUT_OF_MEMORY;
//   - the source tried the run and it failed without a result, without saying why (the "-"
//     cells of Fujii et al.'s table: out of memory, infeasible or failed): PROBE_CRASH, saying
//     so; never guessed to be out of memory;
//   - nobody measured it: PROBE_NOT_MEASURED.
// The wall time is what the probe would have taken on real GPUs, modelled as the sim models it
// (here a probe takes Options.probe_time): for a completed run kProbeStartupSeconds
// (estimator/short_probe.h) and warmup_steps + timed_steps full steps at its measured mean step
// time (a replay runs no short steps; the worker times out a probe whose modelled duration
// exceeds its deadline, probe_pipeline.h); for a failed one kProbeStartupSeconds and one step
// at the performance model's predicted step time (DefaultPerformanceParameters), as a real run
// fails in its first step; 0 for one nobody measured, as nothing ran. Every run is a replay
// (FigureSource::kReplayed), names its source (FILE:LINE) and marks the phases of a training
// step measured (they were, in the source's run). The probe's scope does not matter: the
// measurement is of the whole configuration. Deterministic and thread-safe.
class ReplayBackend : public ProbeBackend {
 public:
  struct Options {
    // Time each probe takes here (cancellable), to watch a replayed search progress as a
    // live one would; zero answers at once. The result's wall_seconds stays the modelled one.
    absl::Duration probe_time = absl::ZeroDuration();
  };

  // Loads the tables of `config` (ReplayTable::Load's errors).
  static absl::StatusOr<std::unique_ptr<ReplayBackend>> Create(const v1::ReplayConfig& config,
                                                               Options options);

  std::string Name() const override { return "replay"; }
  bool Deterministic() const override { return true; }
  // CANCELLED when told to stop first.
  absl::StatusOr<ProbeRun> Run(const ProbeSpec& spec, ProbeContext& context) override;

 private:
  ReplayBackend(ReplayTable table, Options options) : table_(std::move(table)), options_(options) {}

  const ReplayTable table_;
  const Options options_;
};

}  // namespace paratune

#endif  // PARATUNE_WORKER_REPLAY_BACKEND_H_
