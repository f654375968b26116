#include "worker/sim_backend.h"

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "convert/spec_convert.h"
#include "estimator/memory_model.h"
#include "estimator/performance_model.h"

namespace paratune {
namespace {

constexpr int64_t kMaxTimedSteps = 10'000;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// What a simulated probe models: all of it.
constexpr const char* kModelled[] = {"compute",        "tp_collectives", "cp_collectives",
                                     "dp_collectives", "pp_collectives", "pipeline_bubble",
                                     "optimizer",      "peak_memory"};

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
  PT_ASSIGN_OR_RETURN(ModelSpec model, ModelSpecFromProto(assignment.model()));
  PT_ASSIGN_OR_RETURN(TrainingSpec training, TrainingSpecFromProto(assignment.training()));
  PT_ASSIGN_OR_RETURN(ClusterSpec cluster, ClusterSpecFromProto(assignment.cluster()));
  // The scheduler chose the configuration under its own placement rules; the simulation
  // only needs it to be well-formed.
  PlacementRules rules;
  rules.allow_tp_cp_across_nodes = true;
  PT_ASSIGN_OR_RETURN(ParallelConfig config, ParallelConfigFromProto(assignment.config(), model,
                                                                     training, cluster, rules));
  if (assignment.timed_steps() < 1 || assignment.timed_steps() > kMaxTimedSteps) {
    return absl::InvalidArgumentError(absl::StrCat("assignment.timed_steps (",
                                                   assignment.timed_steps(), ") must be in [1, ",
                                                   kMaxTimedSteps, "]"));
  }
  if (context.cancelled().WaitForNotificationWithTimeout(options_.probe_time)) {
    return absl::CancelledError(absl::StrCat("probe ", assignment.name(), " was cancelled"));
  }

  v1::ProbeResult result;
  result.set_backend(Name());
  result.set_simulated(true);
  for (const char* part : kModelled) result.add_modelled(part);
  const MemoryEstimate memory = EstimateMemory(model, training, cluster, config, MemoryOptions());
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

  const PerformanceEstimate predicted = PredictPerformance(
      model, training, cluster, config, DefaultPerformanceParameters(cluster.gpu()));
  const uint64_t seed = NoiseSeed(assignment, config);
  std::mt19937_64 random(seed);
  std::normal_distribution<double> config_noise(0.0, options_.config_noise_sigma);
  std::normal_distribution<double> step_noise(0.0, options_.step_noise_sigma);
  const double config_factor = std::exp(config_noise(random));
  double total = 0;
  for (int64_t i = 0; i < assignment.timed_steps(); ++i) {
    const double step = predicted.step_time_seconds * config_factor * std::exp(step_noise(random));
    result.add_step_times_seconds(step);
    total += step;
  }
  const double mean = total / static_cast<double>(assignment.timed_steps());
  result.set_outcome(v1::PROBE_OK);
  result.set_mean_step_time_seconds(mean);
  result.set_tokens_per_second(static_cast<double>(training.global_batch_size()) *
                               static_cast<double>(training.seq_len()) / mean);
  result.set_model_tflops_per_gpu(predicted.model_flops_per_step /
                                  (mean * static_cast<double>(cluster.world_size())) / 1e12);
  result.set_message(absl::StrFormat(
      "simulated: performance model with seeded noise (assignment seed %d); peak memory %.1f "
      "GiB is the estimate, not a measurement",
      assignment.seed(), memory.peak_bytes / kGiB));
  result.set_wall_seconds(absl::ToDoubleSeconds(absl::Now() - start));
  return result;
}

}  // namespace paratune
