#include "worker/sim_backend.h"

#include <cmath>
#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"
#include "estimator/memory_model.h"
#include "estimator/performance_model.h"
#include "estimator/short_probe.h"
#include "worker/probe_specs.h"
#include "worker/short_steps.h"
#include "worker/sim_steps.h"
#include "worker/step_metrics.h"

namespace paratune {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

double Sum(const std::vector<double>& values) {
  double sum = 0;
  for (double value : values) sum += value;
  return sum;
}

}  // namespace

absl::StatusOr<v1::ProbeResult> SimBackend::Run(const v1::ProbeAssignment& assignment,
                                                ProbeContext& context) {
  PT_ASSIGN_OR_RETURN(const ProbeSpecs specs, ResolveProbeSpecs(assignment));
  v1::ProbeResult result;
  result.set_backend(Name());
  result.set_simulated(true);
  for (const char* part : TrainingStepParts()) result.add_modelled(part);
  result.add_modelled("peak_memory");
  result.add_modelled("wall_time");
  const MemoryEstimate memory =
      EstimateMemory(specs.model, specs.training, specs.cluster, specs.config, MemoryOptions());
  const uint64_t seed = NoiseSeed(assignment.seed(), specs.config);
  const double peak_bytes =
      memory.peak_bytes * SimulatedMemoryFactor(seed, options_.memory_noise_sigma);
  result.set_peak_memory_bytes(static_cast<int64_t>(peak_bytes));
  if (peak_bytes > memory.capacity_bytes) {
    // A real probe runs out of memory in its first step, right after start-up.
    PT_RETURN_IF_ERROR(Sleep(context, kProbeStartupSeconds, assignment.name()));
    result.set_outcome(v1::PROBE_OUT_OF_MEMORY);
    result.set_message(absl::StrFormat(
        "simulated: peak memory %.1f GiB (the estimate, %.1f GiB, x the sim's factor for this "
        "configuration) exceeds the GPU's %.1f GiB",
        peak_bytes / kGiB, memory.peak_bytes / kGiB, memory.capacity_bytes / kGiB));
    result.set_startup_seconds(kProbeStartupSeconds);
    result.set_wall_seconds(kProbeStartupSeconds);
    return result;
  }

  const PerformanceEstimate predicted =
      PredictPerformance(specs.model, specs.training, specs.cluster, specs.config,
                         DefaultPerformanceParameters(specs.cluster.gpu()));
  const int64_t full_micro_batches = specs.config.NumMicroBatches(specs.training);
  SimulatedSteps steps(predicted, full_micro_batches, seed, options_.config_noise_sigma,
                       options_.step_noise_sigma);
  const std::vector<int64_t> counts(assignment.micro_batch_counts().begin(),
                                    assignment.micro_batch_counts().end());
  // The real duration the probe stands for: start-up, warm-up, the timed steps.
  const int64_t warmup_micro_batches = counts.empty() ? full_micro_batches : counts.front();
  double modelled_seconds =
      kProbeStartupSeconds + Sum(steps.Run(warmup_micro_batches, assignment.warmup_steps()));
  std::vector<ShortStepSeries> series;
  std::vector<double> full_steps;
  if (counts.empty()) {
    full_steps = steps.Run(full_micro_batches, assignment.timed_steps());
    modelled_seconds += Sum(full_steps);
  } else {
    for (int64_t micro_batches : counts) {
      series.push_back({micro_batches, steps.Run(micro_batches, assignment.timed_steps())});
      modelled_seconds += Sum(series.back().step_times_seconds);
    }
  }

  const double deadline = assignment.deadline_seconds();
  if (deadline > 0 && modelled_seconds > deadline) {
    PT_RETURN_IF_ERROR(Sleep(context, deadline, assignment.name()));
    result.set_outcome(v1::PROBE_TIMEOUT);
    result.set_message(absl::StrFormat(
        "simulated: the probe would take %.0f s on real GPUs (%.0f s start-up and its steps), "
        "over its deadline of %.0f s",
        modelled_seconds, kProbeStartupSeconds, deadline));
    result.set_wall_seconds(deadline);
    return result;
  }
  PT_RETURN_IF_ERROR(Sleep(context, modelled_seconds, assignment.name()));

  if (!series.empty()) {
    PT_ASSIGN_OR_RETURN(full_steps,
                        ExtrapolateShortSteps(series, full_micro_batches, specs.config, result));
  }
  result.set_outcome(v1::PROBE_OK);
  result.set_startup_seconds(kProbeStartupSeconds);
  SetStepTimes(specs, full_steps, result);
  result.set_message(absl::StrFormat(
      "simulated: performance model with seeded noise (assignment seed %d)%s; wall_seconds "
      "(%.0f s) is the modelled duration on real GPUs; peak memory %.1f GiB is modelled (the "
      "estimate, %.1f GiB, x the sim's factor for this configuration), not a measurement",
      assignment.seed(),
      series.empty()
          ? ""
          : absl::StrFormat("; full step extrapolated from short steps of %d and %d "
                            "micro-batches (true full step %.3f s)",
                            counts.front(), counts.back(), steps.TrueSeconds(full_micro_batches)),
      modelled_seconds, peak_bytes / kGiB, memory.peak_bytes / kGiB));
  result.set_wall_seconds(modelled_seconds);
  return result;
}

absl::Status SimBackend::Sleep(ProbeContext& context, double modelled_seconds,
                               const std::string& probe) const {
  const absl::Duration wait = options_.time_scale > 0
                                  ? absl::Seconds(modelled_seconds * options_.time_scale)
                                  : options_.probe_time;
  return WaitUnlessCancelled(context, wait, probe);
}

}  // namespace paratune
