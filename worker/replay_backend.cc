#include "worker/replay_backend.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "estimator/performance_model.h"
#include "estimator/performance_parameters.h"
#include "estimator/short_probe.h"
#include "worker/step_metrics.h"

namespace paratune {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// "llama3.1-8b dp4 tp2 pp1 cp1 mbs1 on 2 x 4 h100-94gb, global batch 1024, sequence 8192".
std::string Describe(const ProbeSpecs& specs) {
  return absl::StrCat(specs.model.name(), " ", specs.config.ToString(), " on ",
                      specs.cluster.num_nodes(), " x ", specs.cluster.gpus_per_node(), " ",
                      specs.cluster.gpu().name, ", global batch ",
                      specs.training.global_batch_size(), ", sequence ", specs.training.seq_len());
}

// " (also measured in: FILE:LINE (...), ...)" for the runs after the one replayed.
std::string OtherMeasurements(const std::vector<ReplayedRun>& runs) {
  if (runs.size() < 2) return "";
  std::vector<std::string> others;
  for (size_t i = 1; i < runs.size(); ++i) {
    others.push_back(runs[i].outcome == ReplayedRun::Outcome::kCompleted
                         ? absl::StrFormat("%s, %.4g s", runs[i].source, runs[i].step_seconds)
                         : runs[i].source);
  }
  return absl::StrCat("; also measured in ", absl::StrJoin(others, "; "));
}

// The real duration of a probe that fails: start-up, then a first step that does not finish.
// The source gives no time for it, so the step is the performance model's, as the sim's.
double FailedProbeSeconds(const ProbeSpecs& specs) {
  return kProbeStartupSeconds +
         PredictPerformance(specs.model, specs.training, specs.cluster, specs.config,
                            DefaultPerformanceParameters(specs.cluster.gpu()))
             .step_time_seconds;
}

std::string FailedCost(double seconds) {
  return absl::StrFormat(
      "; wall_seconds (%.0f s) is modelled, not measured: %.0f s start-up and one step at the "
      "performance model's predicted %.3g s, as a real run fails in its first step",
      seconds, kProbeStartupSeconds, seconds - kProbeStartupSeconds);
}

}  // namespace

absl::StatusOr<std::unique_ptr<ReplayBackend>> ReplayBackend::Create(const v1::ReplayConfig& config,
                                                                     Options options) {
  PT_ASSIGN_OR_RETURN(ReplayTable table, ReplayTable::Load(config));
  return std::unique_ptr<ReplayBackend>(new ReplayBackend(std::move(table), options));
}

absl::StatusOr<v1::ProbeResult> ReplayBackend::Run(const v1::ProbeAssignment& assignment,
                                                   ProbeContext& context) {
  PT_ASSIGN_OR_RETURN(const ProbeSpecs specs, ResolveProbeSpecs(assignment));
  PT_RETURN_IF_ERROR(WaitUnlessCancelled(context, options_.probe_time, assignment.name()));
  v1::ProbeResult result;
  result.set_backend(Name());
  result.set_simulated(false);
  const std::vector<ReplayedRun>& runs = table_.Find(specs);
  if (runs.empty()) {
    result.set_outcome(v1::PROBE_NOT_MEASURED);
    result.set_message(absl::StrCat("not measured: no run of ", Describe(specs), " among the ",
                                    table_.summary(),
                                    "; a replay never invents one; wall_seconds is modelled, not "
                                    "measured: 0, as nothing ran"));
    result.add_modelled("wall_time");
    result.set_wall_seconds(0);
    return result;
  }
  const ReplayedRun& run = runs.front();
  const std::string also = OtherMeasurements(runs);
  double modelled_seconds = 0;
  switch (run.outcome) {
    case ReplayedRun::Outcome::kCompleted: {
      result.set_outcome(v1::PROBE_OK);
      SetStepTimes(specs, std::vector<double>(assignment.timed_steps(), run.step_seconds), result);
      for (const char* part : TrainingStepParts()) result.add_measured(part);
      const int64_t steps = assignment.warmup_steps() + assignment.timed_steps();
      modelled_seconds = kProbeStartupSeconds + static_cast<double>(steps) * run.step_seconds;
      result.set_message(absl::StrFormat(
          "replay of a measurement, not run here: %s: mean step time %.4g s, %.1f TFLOP/s "
          "per GPU; each of the %d step times is that one value; wall_seconds (%.0f s) is "
          "modelled, not measured: %.0f s start-up and %d full steps (%d warm-up, %d timed) at "
          "the measured mean step time%s",
          run.source, run.step_seconds, result.model_tflops_per_gpu(), assignment.timed_steps(),
          modelled_seconds, kProbeStartupSeconds, steps, assignment.warmup_steps(),
          assignment.timed_steps(), also));
      if (assignment.deadline_seconds() > 0 && modelled_seconds > assignment.deadline_seconds()) {
        // As on a real cluster (and in the sim): a run longer than its deadline is stopped.
        const std::string measured = result.message();
        result.Clear();
        result.set_backend(Name());
        result.set_simulated(false);
        result.set_outcome(v1::PROBE_TIMEOUT);
        modelled_seconds = assignment.deadline_seconds();
        result.set_message(absl::StrFormat(
            "%s; it would take %.0f s, over the probe's deadline of %.0f s, so it timed out",
            measured, kProbeStartupSeconds + static_cast<double>(steps) * run.step_seconds,
            assignment.deadline_seconds()));
      }
      break;
    }
    case ReplayedRun::Outcome::kOutOfMemory:
      result.set_outcome(v1::PROBE_OUT_OF_MEMORY);
      modelled_seconds = FailedProbeSeconds(specs);
      result.set_message(absl::StrCat("replay of a measurement, not run here: ", run.source,
                                      " ran out of memory", FailedCost(modelled_seconds), also));
      break;
    case ReplayedRun::Outcome::kNoResult:
      result.set_outcome(v1::PROBE_CRASH);
      modelled_seconds = FailedProbeSeconds(specs);
      result.set_message(absl::StrCat(
          "replay of a measurement, not run here: ", run.source,
          ": the source's run failed without a result (out of memory, infeasible or failed; "
          "it does not say which, so it is not reported as out of memory)",
          FailedCost(modelled_seconds), also));
      break;
  }
  if (run.peak_memory_bytes > 0) {
    result.set_peak_memory_bytes(run.peak_memory_bytes);
    result.add_measured("peak_memory");
    result.set_message(absl::StrFormat("%s; peak memory %.1f GiB measured", result.message(),
                                       run.peak_memory_bytes / kGiB));
  }
  result.add_modelled("wall_time");
  result.set_startup_seconds(kProbeStartupSeconds);
  result.set_wall_seconds(modelled_seconds);
  return result;
}

}  // namespace paratune
