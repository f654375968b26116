#include "worker/sim_backend.h"

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "estimator/memory_model.h"
#include "estimator/performance_model.h"
#include "worker/probe_specs.h"
#include "worker/step_metrics.h"

namespace paratune {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// SplitMix64's finalizer (Steele, Lea, Flood 2014): a fixed, well-mixed seed from several
// integers, the same on every platform (std::hash is not).
uint64_t Mix(uint64_t seed, uint64_t value) {
  uint64_t z = seed ^ (value + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t NoiseSeed(const v1::ProbeAssignment& assignment, const ParallelConfig& config) {
  uint64_t seed = Mix(0, assignment.seed());
  for (int64_t value : {config.dp(), config.tp(), config.pp(), config.cp(), config.micro_batch(),
                        config.virtual_pipeline(), static_cast<int64_t>(config.sequence_parallel()),
                        static_cast<int64_t>(config.recompute())}) {
    seed = Mix(seed, static_cast<uint64_t>(value));
  }
  return seed;
}

}  // namespace

absl::StatusOr<v1::ProbeResult> SimBackend::Run(const v1::ProbeAssignment& assignment,
                                                ProbeContext& context) {
  const absl::Time start = absl::Now();
  PT_ASSIGN_OR_RETURN(const ProbeSpecs specs, ResolveProbeSpecs(assignment));
  PT_RETURN_IF_ERROR(WaitUnlessCancelled(context, options_.probe_time, assignment.name()));

  v1::ProbeResult result;
  result.set_backend(Name());
  result.set_simulated(true);
  for (const char* part : TrainingStepParts()) result.add_modelled(part);
  result.add_modelled("peak_memory");
  const MemoryEstimate memory =
      EstimateMemory(specs.model, specs.training, specs.cluster, specs.config, MemoryOptions());
  result.set_peak_memory_bytes(static_cast<int64_t>(memory.peak_bytes));
  if (memory.verdict == MemoryVerdict::kOutOfMemory) {
    result.set_outcome(v1::PROBE_OUT_OF_MEMORY);
    result.set_message(
        absl::StrFormat("simulated: estimated peak memory %.1f GiB exceeds the GPU's %.1f GiB "
                        "(peak_memory_bytes is the estimate, not a measurement)",
                        memory.peak_bytes / kGiB, memory.capacity_bytes / kGiB));
    result.set_wall_seconds(absl::ToDoubleSeconds(absl::Now() - start));
    return result;
  }

  const PerformanceEstimate predicted =
      PredictPerformance(specs.model, specs.training, specs.cluster, specs.config,
                         DefaultPerformanceParameters(specs.cluster.gpu()));
  std::mt19937_64 random(NoiseSeed(assignment, specs.config));
  std::normal_distribution<double> config_noise(0.0, options_.config_noise_sigma);
  std::normal_distribution<double> step_noise(0.0, options_.step_noise_sigma);
  const double config_factor = std::exp(config_noise(random));
  std::vector<double> step_times;
  for (int64_t i = 0; i < assignment.timed_steps(); ++i) {
    step_times.push_back(predicted.step_time_seconds * config_factor *
                         std::exp(step_noise(random)));
  }
  result.set_outcome(v1::PROBE_OK);
  SetStepTimes(specs, step_times, result);
  result.set_message(absl::StrFormat(
      "simulated: performance model with seeded noise (assignment seed %d); peak memory %.1f "
      "GiB is the estimate, not a measurement",
      assignment.seed(), memory.peak_bytes / kGiB));
  result.set_wall_seconds(absl::ToDoubleSeconds(absl::Now() - start));
  return result;
}

}  // namespace paratune
