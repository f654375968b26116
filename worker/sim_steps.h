// The sim backend's model of one configuration's training steps (sim_backend.h): its true
// step time at m micro-batches is the performance model's (PredictedStepSeconds) times a
// per-configuration factor, and each step it runs adds per-step noise. Seeded, so a rerun
// reproduces every number.
#ifndef PARATUNE_WORKER_SIM_STEPS_H_
#define PARATUNE_WORKER_SIM_STEPS_H_

#include <cstdint>
#include <random>
#include <vector>

#include "estimator/parallel_config.h"
#include "estimator/performance_model.h"

namespace paratune {

// A seed for the configuration's noise from the probe's seed and every dimension of the
// configuration, the same on every platform.
uint64_t NoiseSeed(uint64_t probe_seed, const ParallelConfig& config);

// The configuration's true peak memory over its estimate: log-normal with `sigma`, from its
// own stream of `seed` (NoiseSeed), so that memory and speed vary independently.
double SimulatedMemoryFactor(uint64_t seed, double sigma);

// Thread-compatible.
class SimulatedSteps {
 public:
  // `full` is the performance model's estimate of the full step of full_micro_batches
  // micro-batches; the factors are log-normal with these sigmas.
  SimulatedSteps(const PerformanceEstimate& full, int64_t full_micro_batches, uint64_t seed,
                 double config_noise_sigma, double step_noise_sigma);

  // The noise-free step time at `micro_batches`: what an exact extrapolation would give.
  double TrueSeconds(int64_t micro_batches) const;
  // `count` steps at `micro_batches`, each with its own noise.
  std::vector<double> Run(int64_t micro_batches, int64_t count);

 private:
  const PerformanceEstimate full_;
  const int64_t full_micro_batches_;
  std::mt19937_64 random_;
  std::normal_distribution<double> step_noise_;
  double config_factor_ = 1;
};

}  // namespace paratune

#endif  // PARATUNE_WORKER_SIM_STEPS_H_
