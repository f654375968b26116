#include "worker/sim_backend.h"

#include <cstdint>
#include <numeric>
#include <vector>

#include "absl/strings/str_format.h"
#include "common/status_macros.h"
#include "estimator/memory_model.h"
#include "estimator/performance_model.h"
#include "estimator/short_probe.h"
#include "worker/sim_steps.h"

namespace paratune {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

double Sum(const std::vector<double>& values) {
  return std::accumulate(values.begin(), values.end(), 0.0);
}

}  // namespace

absl::StatusOr<ProbeRun> SimBackend::Run(const ProbeSpec& spec, ProbeContext& context) {
  ProbeRun run;
  run.source = FigureSource::kSimulated;
  run.detail =
      absl::StrFormat("performance model with seeded noise (assignment seed %d)", spec.seed());
  const MemoryEstimate memory =
      EstimateMemory(spec.model(), spec.training(), spec.cluster(), spec.config(), MemoryOptions());
  const uint64_t seed = NoiseSeed(spec.seed(), spec.config());
  const double peak_bytes =
      memory.peak_bytes * SimulatedMemoryFactor(seed, options_.memory_noise_sigma);
  run.peak_memory_bytes = static_cast<int64_t>(peak_bytes);
  run.peak_memory = Provenance::kModelled;
  run.peak_memory_note =
      absl::StrFormat("(the estimate, %.1f GiB, x the sim's factor for this configuration)",
                      memory.peak_bytes / kGiB);
  run.startup_seconds = kProbeStartupSeconds;
  run.wall_time = Provenance::kModelled;
  if (peak_bytes > memory.capacity_bytes) {
    // A real probe runs out of memory in its first step, right after start-up.
    PT_RETURN_IF_ERROR(Sleep(context, kProbeStartupSeconds, spec));
    run.outcome = v1::PROBE_OUT_OF_MEMORY;
    run.detail =
        absl::StrFormat("the peak memory exceeds the GPU's %.1f GiB", memory.capacity_bytes / kGiB);
    run.wall_seconds = kProbeStartupSeconds;
    run.wall_time_note = "the start-up, after which a real probe runs out of memory";
    return run;
  }

  const PerformanceEstimate predicted =
      PredictPerformance(spec.model(), spec.training(), spec.cluster(), spec.config(),
                         DefaultPerformanceParameters(spec.cluster().gpu()));
  SimulatedSteps steps(predicted, spec.micro_batches(), seed, options_.config_noise_sigma,
                       options_.step_noise_sigma);
  const std::vector<int64_t> counts = spec.TimedMicroBatches();
  // The real duration the probe stands for: start-up, warm-up, the timed steps.
  run.wall_seconds = kProbeStartupSeconds + Sum(steps.Run(counts.front(), spec.warmup_steps()));
  for (int64_t micro_batches : counts) {
    run.timed_steps.push_back({micro_batches, steps.Run(micro_batches, spec.timed_steps())});
    run.wall_seconds += Sum(run.timed_steps.back().step_times_seconds);
  }
  run.wall_time_note = absl::StrFormat(
      "%.0f s start-up, %d warm-up and %d timed steps on real GPUs", kProbeStartupSeconds,
      spec.warmup_steps(), spec.timed_steps() * static_cast<int64_t>(counts.size()));
  PT_RETURN_IF_ERROR(Sleep(context, run.wall_seconds, spec));
  run.outcome = v1::PROBE_OK;
  run.phases = StepPhases(spec, Provenance::kModelled);
  if (!spec.micro_batch_counts().empty()) {
    run.notes.push_back(
        absl::StrFormat("true full step %.3f s", steps.TrueSeconds(spec.micro_batches())));
  }
  return run;
}

absl::Status SimBackend::Sleep(ProbeContext& context, double modelled_seconds,
                               const ProbeSpec& spec) const {
  const absl::Duration wait = options_.time_scale > 0
                                  ? absl::Seconds(modelled_seconds * options_.time_scale)
                                  : options_.probe_time;
  return WaitUnlessStopped(context, wait, spec);
}

}  // namespace paratune
