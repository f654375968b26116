#include "worker/sim_steps.h"

#include <cmath>

#include "estimator/short_probe.h"

namespace paratune {
namespace {

// SplitMix64's finalizer (Steele, Lea, Flood 2014): a fixed, well-mixed seed from several
// integers, the same on every platform (std::hash is not).
uint64_t Mix(uint64_t seed, uint64_t value) {
  uint64_t z = seed ^ (value + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

uint64_t NoiseSeed(uint64_t probe_seed, const ParallelConfig& config) {
  uint64_t seed = Mix(0, probe_seed);
  for (int64_t value : {config.dp(), config.tp(), config.pp(), config.cp(), config.micro_batch(),
                        config.virtual_pipeline(), static_cast<int64_t>(config.sequence_parallel()),
                        static_cast<int64_t>(config.recompute())}) {
    seed = Mix(seed, static_cast<uint64_t>(value));
  }
  return seed;
}

double SimulatedMemoryFactor(uint64_t seed, double sigma) {
  std::mt19937_64 random(Mix(seed, 0x6d656d6f7279ULL));  // "memory"
  std::normal_distribution<double> noise(0.0, sigma);
  return std::exp(noise(random));
}

SimulatedSteps::SimulatedSteps(const PerformanceEstimate& full, int64_t full_micro_batches,
                               uint64_t seed, double config_noise_sigma, double step_noise_sigma)
    : full_(full),
      full_micro_batches_(full_micro_batches),
      random_(seed),
      step_noise_(0.0, step_noise_sigma) {
  std::normal_distribution<double> config_noise(0.0, config_noise_sigma);
  config_factor_ = std::exp(config_noise(random_));
}

double SimulatedSteps::TrueSeconds(int64_t micro_batches) const {
  return PredictedStepSeconds(full_, full_micro_batches_, micro_batches) * config_factor_;
}

std::vector<double> SimulatedSteps::Run(int64_t micro_batches, int64_t count) {
  std::vector<double> times;
  for (int64_t i = 0; i < count; ++i) {
    times.push_back(TrueSeconds(micro_batches) * std::exp(step_noise_(random_)));
  }
  return times;
}

}  // namespace paratune
