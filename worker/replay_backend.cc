#include "worker/replay_backend.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "estimator/performance_model.h"
#include "estimator/performance_parameters.h"
#include "estimator/short_probe.h"

namespace paratune {
namespace {

// "llama3.1-8b dp4 tp2 pp1 cp1 mbs1 on 2 x 4 h100-94gb, global batch 1024, sequence 8192".
std::string Describe(const ProbeSpec& spec) {
  return absl::StrCat(
      spec.model().name(), " ", spec.config().ToString(), " on ", spec.cluster().num_nodes(), " x ",
      spec.cluster().gpus_per_node(), " ", spec.cluster().gpu().name, ", global batch ",
      spec.training().global_batch_size(), ", sequence ", spec.training().seq_len());
}

// "also measured in FILE:LINE (...), 0.45 s; ..." for the runs after the one replayed.
std::string OtherMeasurements(const std::vector<ReplayedRun>& runs) {
  std::vector<std::string> others;
  for (size_t i = 1; i < runs.size(); ++i) {
    others.push_back(runs[i].outcome == ReplayedRun::Outcome::kCompleted
                         ? absl::StrFormat("%s, %.4g s", runs[i].source, runs[i].step_seconds)
                         : runs[i].source);
  }
  return absl::StrCat("also measured in ", absl::StrJoin(others, "; "));
}

// A probe that fails: start-up, then a first step that does not finish. The source gives no
// time for it, so the step is the performance model's, as the sim's.
void FailsInItsFirstStep(const ProbeSpec& spec, ProbeRun& run) {
  const double step =
      PredictPerformance(spec.model(), spec.training(), spec.cluster(), spec.config(),
                         DefaultPerformanceParameters(spec.cluster().gpu()))
          .step_time_seconds;
  run.wall_seconds = kProbeStartupSeconds + step;
  run.wall_time_note = absl::StrFormat(
      "%.0f s start-up and one step at the performance model's predicted %.3g s, as a real run "
      "fails in its first step",
      kProbeStartupSeconds, step);
}

}  // namespace

absl::StatusOr<std::unique_ptr<ReplayBackend>> ReplayBackend::Create(const v1::ReplayConfig& config,
                                                                     Options options) {
  PT_ASSIGN_OR_RETURN(ReplayTable table, ReplayTable::Load(config));
  return std::unique_ptr<ReplayBackend>(new ReplayBackend(std::move(table), options));
}

absl::StatusOr<ProbeRun> ReplayBackend::Run(const ProbeSpec& spec, ProbeContext& context) {
  PT_RETURN_IF_ERROR(WaitUnlessStopped(context, options_.probe_time, spec));
  ProbeRun run;
  run.source = FigureSource::kReplayed;
  run.wall_time = Provenance::kModelled;
  const std::vector<ReplayedRun>& runs = table_.Find(spec.configuration());
  if (runs.empty()) {
    run.outcome = v1::PROBE_NOT_MEASURED;
    run.detail = absl::StrCat("not measured: no run of ", Describe(spec), " among the ",
                              table_.summary(), "; a replay never invents one");
    run.wall_time_note = "nothing ran";
    return run;
  }
  const ReplayedRun& replayed = runs.front();
  run.detail = replayed.source;
  run.startup_seconds = kProbeStartupSeconds;
  switch (replayed.outcome) {
    case ReplayedRun::Outcome::kCompleted: {
      run.outcome = v1::PROBE_OK;
      run.timed_steps.push_back(
          {spec.micro_batches(), std::vector<double>(spec.timed_steps(), replayed.step_seconds)});
      run.phases = StepPhases(spec, Provenance::kMeasured);
      const int64_t steps = spec.warmup_steps() + spec.timed_steps();
      run.wall_seconds = kProbeStartupSeconds + static_cast<double>(steps) * replayed.step_seconds;
      run.wall_time_note = absl::StrFormat(
          "%.0f s start-up and %d full steps (%d warm-up, %d timed) at the measured mean step "
          "time",
          kProbeStartupSeconds, steps, spec.warmup_steps(), spec.timed_steps());
      break;
    }
    case ReplayedRun::Outcome::kOutOfMemory:
      run.outcome = v1::PROBE_OUT_OF_MEMORY;
      run.detail = absl::StrCat(replayed.source, " ran out of memory");
      FailsInItsFirstStep(spec, run);
      break;
    case ReplayedRun::Outcome::kNoResult:
      run.outcome = v1::PROBE_CRASH;
      run.detail = absl::StrCat(
          replayed.source,
          ": the source's run failed without a result (out of memory, infeasible or failed; it "
          "does not say which, so it is not reported as out of memory)");
      FailsInItsFirstStep(spec, run);
      break;
  }
  if (runs.size() > 1) run.notes.push_back(OtherMeasurements(runs));
  if (replayed.peak_memory_bytes > 0) {
    run.peak_memory_bytes = replayed.peak_memory_bytes;
    run.peak_memory = Provenance::kMeasured;
  }
  return run;
}

}  // namespace paratune
