#include "worker/probe/probe_report.h"

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "estimator/memory_model.h"
#include "worker/probe/footprint_plan.h"

namespace paratune {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// OK when an OK report's timed steps are one series of spec.timed_steps() positive seconds per
// count of spec.TimedMicroBatches(), in order; INVALID_ARGUMENT naming the field otherwise.
absl::Status CheckTimedSteps(const ProbeSpec& spec, const v1::ProbeReport& report) {
  const std::vector<int64_t> counts = spec.TimedMicroBatches();
  if (report.timed_steps_size() != static_cast<int>(counts.size())) {
    return absl::InvalidArgumentError(absl::StrCat("timed_steps holds ", report.timed_steps_size(),
                                                   " series for the ", counts.size(),
                                                   " micro-batch counts it was to run"));
  }
  for (int k = 0; k < report.timed_steps_size(); ++k) {
    const v1::ShortSteps& series = report.timed_steps(k);
    const std::string field = absl::StrCat("timed_steps[", k, "]");
    if (series.micro_batches() != counts[k]) {
      return absl::InvalidArgumentError(absl::StrCat(field, ".micro_batches (",
                                                     series.micro_batches(), ") is not ", counts[k],
                                                     ", the count it was to run"));
    }
    if (series.step_times_seconds_size() != spec.timed_steps()) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".step_times_seconds holds ", series.step_times_seconds_size(),
                       " steps, not assignment.timed_steps (", spec.timed_steps(), ")"));
    }
    for (int i = 0; i < series.step_times_seconds_size(); ++i) {
      const double seconds = series.step_times_seconds(i);
      if (!(seconds > 0) || !std::isfinite(seconds)) {
        return absl::InvalidArgumentError(
            absl::StrCat(field, ".step_times_seconds[", i, "] (", seconds, ") is not a step time"));
      }
    }
  }
  return absl::OkStatus();
}

void AddMemoryTerms(const ProbeSpec& spec, int64_t stage, v1::ProbeMeasurements& out) {
  const FootprintPlan plan = FootprintPlan::OfStage(spec, stage);
  for (const TermAllocation& term : plan.terms()) {
    v1::MemoryTermBytes& bytes = *out.add_memory_terms();
    bytes.set_term(term.name);
    bytes.set_estimated_bytes(term.estimated_bytes);
    bytes.set_allocated_bytes(term.allocated_bytes);
  }
  out.set_estimated_peak_memory_bytes(static_cast<int64_t>(plan.estimated_bytes()));
}

}  // namespace

const char* CollectiveOperationName(CollectiveOperation operation) {
  switch (operation) {
    case CollectiveOperation::kAllGather:
      return "all_gather";
    case CollectiveOperation::kReduceScatter:
      return "reduce_scatter";
    case CollectiveOperation::kAllReduce:
      return "all_reduce";
    case CollectiveOperation::kSendRecv:
      return "send_recv";
  }
  return "unknown";
}

double BusBandwidthFactor(CollectiveOperation operation, int64_t ranks) {
  const double n = static_cast<double>(ranks);
  switch (operation) {
    case CollectiveOperation::kAllGather:
    case CollectiveOperation::kReduceScatter:
      return (n - 1) / n;
    case CollectiveOperation::kAllReduce:
      return 2 * (n - 1) / n;
    case CollectiveOperation::kSendRecv:
      return 1;
  }
  return 1;
}

bool DataParallelModelled(const ProbeSpec& spec) {
  return spec.replica() && spec.config().dp() > 1;
}

v1::ProbeReport ReportFromMeasurement(const ProbeSpec& spec, const ProbeMeasurement& m) {
  v1::ProbeReport report;
  report.set_outcome(v1::PROBE_OK);
  const size_t per_series = static_cast<size_t>(spec.timed_steps());
  size_t first = 0;
  for (int64_t micro_batches : spec.TimedMicroBatches()) {
    v1::ShortSteps& series = *report.add_timed_steps();
    series.set_micro_batches(micro_batches);
    for (size_t i = first; i < first + per_series && i < m.step_seconds.size(); ++i) {
      series.add_step_times_seconds(m.step_seconds[i]);
    }
    first += per_series;
  }
  report.set_peak_memory_bytes(m.peak_memory_bytes);
  report.set_peak_memory_stage(m.peak_memory_stage);

  v1::ProbeMeasurements& out = *report.mutable_measurements();
  for (int p = 0; p < static_cast<int>(ProbePhase::kCount); ++p) {
    v1::PhaseTime& phase = *out.add_phases();
    phase.set_phase(ProbePhaseName(static_cast<ProbePhase>(p)));
    phase.set_seconds(m.phase_seconds[p]);
  }
  for (const CollectiveMeasurement& c : m.collectives) {
    v1::CollectiveBandwidth& bandwidth = *out.add_collectives();
    bandwidth.set_group(RankGroupName(c.group));
    bandwidth.set_operation(CollectiveOperationName(c.operation));
    bandwidth.set_ranks(c.ranks);
    bandwidth.set_bytes(c.bytes);
    bandwidth.set_seconds(c.seconds);
    const double algorithm = static_cast<double>(c.bytes) / c.seconds / 1e9;
    bandwidth.set_algorithm_bandwidth_gbps(algorithm);
    bandwidth.set_bus_bandwidth_gbps(algorithm * BusBandwidthFactor(c.operation, c.ranks));
  }
  AddMemoryTerms(spec, m.peak_memory_stage, out);
  out.set_gpu_name(m.device.gpu_name);
  out.set_driver_version(m.device.driver_version);
  out.set_cuda_driver_version(m.device.cuda_driver_version);
  out.set_cuda_runtime_version(m.device.cuda_runtime_version);
  out.set_nccl_version(m.device.nccl_version);
  out.set_attention_kernel(m.attention_kernel);
  out.set_attention_fallback_reason(m.attention_fallback_reason);
  out.set_attention_backward_kernel(m.attention_backward_kernel);
  out.set_attention_backward_fallback_reason(m.attention_backward_fallback_reason);
  return report;
}

v1::ProbeOutcome OutcomeForError(const absl::Status& error) {
  switch (error.code()) {
    case absl::StatusCode::kResourceExhausted:
      return v1::PROBE_OUT_OF_MEMORY;
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kFailedPrecondition:
      return v1::PROBE_INFRA_ERROR;
    default:
      return v1::PROBE_CRASH;
  }
}

v1::ProbeReport ReportFromError(const absl::Status& error) {
  v1::ProbeReport report;
  report.set_outcome(OutcomeForError(error));
  report.set_error(std::string(error.message()));
  return report;
}

ProbeRun RunFromReport(const ProbeSpec& spec, const v1::ProbeReport& report) {
  ProbeRun run;
  run.source = FigureSource::kMeasured;
  run.outcome = report.outcome();
  if (run.outcome != v1::PROBE_OK) {
    run.detail = report.error();
    return run;
  }
  const absl::Status steps = CheckTimedSteps(spec, report);
  if (!steps.ok()) {
    run.outcome = v1::PROBE_CRASH;
    run.detail = absl::StrCat("paratune-probe's report: ", steps.message(),
                              "; are the worker and paratune-probe from the same build?");
    return run;
  }
  for (const v1::ShortSteps& series : report.timed_steps()) {
    run.timed_steps.push_back(
        {series.micro_batches(),
         {series.step_times_seconds().begin(), series.step_times_seconds().end()}});
  }
  run.phases = StepPhases(spec, Provenance::kMeasured);
  if (DataParallelModelled(spec)) {
    run.phases[static_cast<int>(ProbePhase::kDpCollectives)] = Provenance::kModelled;
  }
  const v1::ProbeMeasurements& measurements = report.measurements();
  run.detail = absl::StrFormat("paratune-probe on %d x %s", spec.layout().world_size(),
                               measurements.gpu_name());
  run.peak_memory_bytes = report.peak_memory_bytes();
  run.peak_memory = Provenance::kMeasured;
  run.peak_memory_note =
      absl::StrFormat("on pipeline stage %d, %.2f GiB estimated", report.peak_memory_stage(),
                      measurements.estimated_peak_memory_bytes() / kGiB);
  run.measurements = measurements;
  return run;
}

}  // namespace paratune
