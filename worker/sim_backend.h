// The `sim` backend (DESIGN.md §8): answers a probe from the estimator, with seeded noise,
// for machines without GPUs (demos, CI). Every result is labelled simulated.
#ifndef PARATUNE_WORKER_SIM_BACKEND_H_
#define PARATUNE_WORKER_SIM_BACKEND_H_

#include <string>

#include "absl/time/time.h"
#include "worker/probe_backend.h"

namespace paratune {

// Deterministic: the noise is seeded from the assignment's seed and its configuration, so a
// rerun of a search reproduces every number. Thread-safe (no mutable state).
//
// It runs the probe the assignment asks for as a real backend would, in model time: the
// configuration's true step time at m micro-batches is the performance model's
// (PredictedStepSeconds) x a per-configuration factor (log-normal, sigma config_noise_sigma),
// and each step adds a per-step factor (log-normal, sigma step_noise_sigma). It runs the
// warm-up steps, then the timed steps of each count of ProbeSpec::TimedMicroBatches (the
// short steps the worker extrapolates the full step from, or full steps).
//
// Time: the probe stands for kProbeStartupSeconds of start-up, the warm-up and the timed
// steps on real GPUs; that modelled duration is the run's wall time (so GPU-hours are the
// real-equivalent cost, labelled modelled; the worker times out a probe whose modelled
// duration exceeds its deadline, probe_pipeline.h), and the probe sleeps time_scale x it (or
// probe_time when time_scale is 0).
//
// Memory: the configuration's true peak is the memory estimate x a per-configuration factor
// (log-normal, sigma memory_noise_sigma), reported as the run's peak memory (modelled), so
// a RISKY configuration near capacity may not fit, as on a real cluster, and a search's
// memory calibration (docs/memory.md) has something to learn.
//
// Outcomes: OUT_OF_MEMORY when the true peak exceeds the GPU's capacity, after the start-up;
// else OK. Nothing is measured; every figure is simulated and every phase modelled.
class SimBackend : public ProbeBackend {
 public:
  struct Options {
    // Wall time each probe takes (cancellable) when time_scale is 0, so that progress is
    // visible in demos.
    absl::Duration probe_time = absl::Milliseconds(200);
    // When > 0, each probe sleeps this fraction of the duration it models on real GPUs, so
    // deadlines, leases and budgets run with real ratios (e.g. 0.01: a 90 s probe, 0.9 s).
    double time_scale = 0;
    double config_noise_sigma = 0.05;
    double step_noise_sigma = 0.01;
    // The spread of true peak memory around the estimate: an assumption, the calibration's
    // prior (estimator/memory_calibration.h); no public table reports measured peaks.
    double memory_noise_sigma = 0.05;
  };

  explicit SimBackend(Options options) : options_(options) {}

  std::string Name() const override { return "sim"; }
  bool Deterministic() const override { return true; }
  // CANCELLED when told to stop first. Every member of a gang runs the same simulation and
  // reports it; the scheduler keeps rank 0's.
  absl::StatusOr<ProbeRun> Run(const ProbeSpec& spec, ProbeContext& context) override;

 private:
  // Waits the real time that stands for `modelled_seconds` (time_scale), or probe_time.
  absl::Status Sleep(ProbeContext& context, double modelled_seconds, const ProbeSpec& spec) const;

  const Options options_;
};

}  // namespace paratune

#endif  // PARATUNE_WORKER_SIM_BACKEND_H_
