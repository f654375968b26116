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
// Outcomes: OUT_OF_MEMORY when the memory estimate exceeds the GPU's capacity (peak memory
// reported = the estimate); else OK with timed_steps step times = the predicted step time
// x a per-configuration factor (log-normal, sigma config_noise_sigma) x a per-step factor
// (log-normal, sigma step_noise_sigma). Nothing is measured; everything is modelled.
class SimBackend : public ProbeBackend {
 public:
  struct Options {
    // Wall time each probe takes (cancellable), so that progress is visible in demos.
    absl::Duration probe_time = absl::Milliseconds(200);
    double config_noise_sigma = 0.05;
    double step_noise_sigma = 0.01;
  };

  explicit SimBackend(Options options) : options_(options) {}

  std::string Name() const override { return "sim"; }
  bool Deterministic() const override { return true; }
  // INVALID_ARGUMENT naming the field for an invalid model, training run, cluster,
  // configuration (dp x tp x pp x cp must be the cluster's GPUs) or timed_steps outside
  // [1, 10000]; CANCELLED when `cancel` is notified first.
  // Every member of a gang runs the same simulation and reports it; the scheduler keeps rank
  // 0's.
  absl::StatusOr<v1::ProbeResult> Run(const v1::ProbeAssignment& assignment,
                                      ProbeContext& context) override;

 private:
  const Options options_;
};

}  // namespace paratune

#endif  // PARATUNE_WORKER_SIM_BACKEND_H_
