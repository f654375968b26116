#include "worker/probe_result_builder.h"

#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "estimator/performance_model.h"
#include "estimator/performance_parameters.h"
#include "worker/probe/step_statistics.h"
#include "worker/short_steps.h"

namespace paratune {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// How a message names where its figures come from.
const char* SourceWords(FigureSource source) {
  switch (source) {
    case FigureSource::kMeasured:
      return "measured";
    case FigureSource::kReplayed:
      return "replay of a measurement, not run here";
    case FigureSource::kSimulated:
      return "simulated";
  }
  return "";
}

void Label(Provenance mark, const char* part, v1::ProbeResult& result) {
  if (mark == Provenance::kMeasured) result.add_measured(part);
  if (mark == Provenance::kModelled) result.add_modelled(part);
}

// One series of the full step's micro-batches is full steps; other series are short steps.
bool RanFullSteps(const ProbeSpec& spec, const std::vector<ShortStepSeries>& series) {
  return series.size() == 1 && series.front().micro_batches == spec.micro_batches();
}

void AddStepStatistics(const StepStatistics& stats, v1::ProbeMeasurements& out) {
  out.set_median_step_time_seconds(stats.median);
  out.set_min_step_time_seconds(stats.min);
  out.set_max_step_time_seconds(stats.max);
  out.set_step_time_cv(stats.cv);
}

// "mean step time 0.1845 s over 4 timed steps (CV 0.70%), 52.1 TFLOP/s per GPU", or with
// short steps "..., the full step of 8 micro-batches extrapolated from 4 timed steps at each
// of 2 and 4 micro-batches per step, ...".
std::string DescribeSteps(const ProbeSpec& spec, const ProbeRun& run, const StepStatistics& stats,
                          const v1::ProbeResult& result) {
  std::string steps = absl::StrFormat("mean step time %.4g s", stats.mean);
  const size_t timed = run.timed_steps.front().step_times_seconds.size();
  if (RanFullSteps(spec, run.timed_steps)) {
    absl::StrAppendFormat(&steps, " over %d timed steps", timed);
  } else {
    std::vector<int64_t> counts;
    for (const ShortStepSeries& series : run.timed_steps) counts.push_back(series.micro_batches);
    absl::StrAppendFormat(&steps,
                          ", the full step of %d micro-batches extrapolated from %d timed steps "
                          "at each of %s micro-batches per step",
                          spec.micro_batches(), timed, absl::StrJoin(counts, " and "));
  }
  // A replayed run's steps are one value and a simulated run's spread is its noise: only a
  // measured spread says something of the configuration.
  if (run.source == FigureSource::kMeasured && result.step_times_seconds_size() > 1) {
    absl::StrAppendFormat(&steps, " (CV %.2f%%)", 100 * stats.cv);
  }
  absl::StrAppendFormat(&steps, ", %.1f TFLOP/s per GPU", result.model_tflops_per_gpu());
  return steps;
}

// What a replica-scope probe of a data-parallel configuration left of the data-parallel
// traffic, for the message; "" when nothing.
std::string DescribeReplica(const ProbeSpec& spec, const ProbeRun& run, double modelled_dp) {
  if (!spec.replica() || spec.config().dp() == 1 || run.source == FigureSource::kSimulated) {
    return "";
  }
  switch (run.phases[static_cast<int>(ProbePhase::kDpCollectives)]) {
    case Provenance::kModelled:
      return absl::StrFormat(
          "one of %d data-parallel replicas ran; the %.4g s of data-parallel communication per "
          "step are modelled",
          spec.config().dp(), modelled_dp);
    case Provenance::kAbsent:
      return absl::StrFormat(
          "replica scope: %d of the configuration's %d data-parallel replicas ran, so its "
          "data-parallel traffic was not measured",
          spec.layout().dp(), spec.config().dp());
    case Provenance::kMeasured:
      break;
  }
  return "";
}

// Sets the figures of an OK run's steps on `result`: the full steps (extrapolated when they
// are short; PROBE_INFRA_ERROR, its reason appended to `detail`, when they do not extrapolate)
// with any modelled data-parallel time, the throughput, the phase labels and the cuda probe's
// measurements. Returns the message's clauses of the steps and of a replica's left-out traffic.
std::pair<std::string, std::string> AddSteps(const ProbeSpec& spec, const ProbeRun& run,
                                             std::string& detail, v1::ProbeResult& result) {
  std::vector<double> full_steps;
  if (RanFullSteps(spec, run.timed_steps)) {
    full_steps = run.timed_steps.front().step_times_seconds;
  } else {
    absl::StatusOr<std::vector<double>> extrapolated =
        ExtrapolateShortSteps(run.timed_steps, spec.micro_batches(), spec.config(), result);
    if (!extrapolated.ok()) {
      // Such a measurement says nothing of the configuration; another attempt measures again.
      result.set_outcome(v1::PROBE_INFRA_ERROR);
      detail = absl::StrCat(detail, detail.empty() ? "" : ": ", extrapolated.status().message());
      return {};
    }
    full_steps = *std::move(extrapolated);
  }
  const bool dp_modelled =
      run.source != FigureSource::kSimulated &&
      run.phases[static_cast<int>(ProbePhase::kDpCollectives)] == Provenance::kModelled;
  const PerformanceEstimate predicted =
      dp_modelled || run.measurements.has_value()
          ? PredictPerformance(spec.model(), spec.training(), spec.cluster(), spec.config(),
                               DefaultPerformanceParameters(spec.cluster().gpu()))
          : PerformanceEstimate();
  const double modelled_dp = dp_modelled ? predicted.dp_communication_seconds : 0;
  for (double& seconds : full_steps) {
    seconds += modelled_dp;
    result.add_step_times_seconds(seconds);
  }
  const StepStatistics stats = ComputeStepStatistics(full_steps);
  const ParallelConfig& config = spec.config();
  const double gpus = static_cast<double>(config.dp() * config.tp() * config.pp() * config.cp());
  result.set_mean_step_time_seconds(stats.mean);
  result.set_tokens_per_second(static_cast<double>(spec.training().global_batch_size()) *
                               static_cast<double>(spec.training().seq_len()) / stats.mean);
  result.set_model_tflops_per_gpu(ModelFlopsPerStep(spec.model(), spec.training()) /
                                  (stats.mean * gpus) / 1e12);
  for (int p = 0; p < static_cast<int>(ProbePhase::kCount); ++p) {
    Label(run.phases[p], ProbePhaseName(static_cast<ProbePhase>(p)), result);
  }
  if (run.measurements.has_value()) {
    v1::ProbeMeasurements& out = *result.mutable_measurements();
    out = *run.measurements;
    AddStepStatistics(stats, out);
    out.set_predicted_step_time_seconds(predicted.step_time_seconds);
    out.set_modelled_dp_seconds_per_step(modelled_dp);
    out.set_micro_batches_per_step(spec.micro_batches());
  }
  return {DescribeSteps(spec, run, stats, result), DescribeReplica(spec, run, modelled_dp)};
}

}  // namespace

v1::ProbeResult BuildProbeResult(const ProbeSpec& spec, const std::string& backend,
                                 const ProbeRun& run, double measured_wall_seconds) {
  v1::ProbeResult result;
  result.set_outcome(run.outcome);
  result.set_backend(backend);
  result.set_simulated(run.source == FigureSource::kSimulated);
  result.set_startup_seconds(run.startup_seconds);
  std::string detail = run.detail;
  std::string steps;    // the steps' clause of an OK run
  std::string replica;  // what a replica-scope probe left out
  if (run.outcome == v1::PROBE_OK && !run.timed_steps.empty()) {
    std::tie(steps, replica) = AddSteps(spec, run, detail, result);
  }

  // An OK run says where all its figures come from; a failed one has few, so only a replayed
  // or simulated failure says so (nothing was replayed for a run that was not measured).
  const bool says_source =
      result.outcome() == v1::PROBE_OK ||
      (run.source != FigureSource::kMeasured && result.outcome() != v1::PROBE_NOT_MEASURED);
  std::vector<std::string> head;
  if (says_source) head.push_back(SourceWords(run.source));
  if (!detail.empty()) head.push_back(detail);
  if (!steps.empty()) head.push_back(steps);
  std::vector<std::string> clauses = {absl::StrJoin(head, ": ")};
  if (run.source == FigureSource::kReplayed && !steps.empty()) {
    clauses.push_back(absl::StrFormat(
        "each of the %d step times is that one value: the source reports one mean per run",
        result.step_times_seconds_size()));
  }
  clauses.insert(clauses.end(), run.notes.begin(), run.notes.end());
  if (run.peak_memory != Provenance::kAbsent) {
    result.set_peak_memory_bytes(run.peak_memory_bytes);
    Label(run.peak_memory, "peak_memory", result);
    clauses.push_back(
        absl::StrFormat("peak memory %.2f GiB %s%s%s", run.peak_memory_bytes / kGiB,
                        run.peak_memory == Provenance::kMeasured ? "measured" : "modelled",
                        run.peak_memory_note.empty() ? "" : " ", run.peak_memory_note));
  }
  if (run.wall_time == Provenance::kModelled) {
    result.set_wall_seconds(run.wall_seconds);
    Label(run.wall_time, "wall_time", result);
    clauses.push_back(absl::StrFormat("wall_seconds (%.0f s) is modelled, not measured%s%s",
                                      run.wall_seconds, run.wall_time_note.empty() ? "" : ": ",
                                      run.wall_time_note));
  } else {
    result.set_wall_seconds(measured_wall_seconds);
  }
  if (!replica.empty()) clauses.push_back(replica);
  result.set_message(absl::StrJoin(clauses, "; "));
  return result;
}

}  // namespace paratune
