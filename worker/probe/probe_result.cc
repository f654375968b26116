#include "worker/probe/probe_result.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "estimator/memory_model.h"
#include "estimator/performance_model.h"
#include "estimator/performance_parameters.h"
#include "estimator/short_probe.h"
#include "worker/probe/footprint_plan.h"
#include "worker/probe/step_statistics.h"
#include "worker/short_steps.h"

namespace paratune {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr char kBackend[] = "cuda";

// The parts of a step the probe ran on its GPUs, and those it modelled.
void LabelParts(const ProbeSpec& spec, v1::ProbeResult& result) {
  for (const char* part : {"gemm", "attention", "elementwise", "optimizer", "peak_memory"}) {
    result.add_measured(part);
  }
  const RankLayout& layout = spec.layout();
  if (layout.tp() > 1) result.add_measured("tp_collectives");
  if (layout.cp() > 1) result.add_measured("cp_collectives");
  if (layout.pp() > 1) {
    result.add_measured("pp_send_recv");
    result.add_measured("pipeline_bubble");
  }
  if (DataParallelModelled(spec)) {
    result.add_modelled("dp_collectives");
  } else if (layout.GroupSize(RankGroup::kDataContext) > 1) {
    result.add_measured("dp_collectives");
  }
}

void AddMemoryTerms(const ProbeSpec& spec, int64_t stage, v1::ProbeMeasurements& out) {
  const FootprintPlan plan = FootprintPlan::Create(spec.model(), spec.training(), spec.cluster(),
                                                   spec.config(), MemoryOptions(), stage);
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

v1::ProbeResult ResultFromMeasurement(const ProbeSpec& spec, const ProbeMeasurement& m) {
  const PerformanceEstimate predicted =
      PredictPerformance(spec.model(), spec.training(), spec.cluster(), spec.config(),
                         DefaultPerformanceParameters(spec.cluster().gpu()));
  const double modelled_dp = DataParallelModelled(spec) ? predicted.dp_communication_seconds : 0;

  v1::ProbeResult result;
  result.set_outcome(v1::PROBE_OK);
  result.set_backend(kBackend);
  // The full steps: measured, or extrapolated from the short steps (estimator/short_probe.h).
  std::vector<double> full_steps = m.step_seconds;
  if (!spec.micro_batch_counts().empty()) {
    std::vector<ShortStepSeries> series;
    const size_t per_series = static_cast<size_t>(spec.timed_steps());
    for (size_t k = 0; k < spec.micro_batch_counts().size(); ++k) {
      const auto first = m.step_seconds.begin() + k * per_series;
      series.push_back({spec.micro_batch_counts()[k], {first, first + per_series}});
    }
    absl::StatusOr<std::vector<double>> extrapolated =
        ExtrapolateShortSteps(series, spec.micro_batches(), spec.config(), result);
    if (!extrapolated.ok()) return result;  // PROBE_INFRA_ERROR, saying why
    full_steps = *std::move(extrapolated);
  }
  std::vector<double> steps;
  for (double seconds : full_steps) {
    steps.push_back(seconds + modelled_dp);
    result.add_step_times_seconds(steps.back());
  }
  const StepStatistics stats = ComputeStepStatistics(steps);
  const double gpus = static_cast<double>(spec.config().dp() * spec.config().tp() *
                                          spec.config().pp() * spec.config().cp());
  result.set_mean_step_time_seconds(stats.mean);
  result.set_tokens_per_second(static_cast<double>(spec.training().global_batch_size()) *
                               static_cast<double>(spec.training().seq_len()) / stats.mean);
  result.set_model_tflops_per_gpu(ModelFlopsPerStep(spec.model(), spec.training()) /
                                  (stats.mean * gpus) / 1e12);
  result.set_peak_memory_bytes(m.peak_memory_bytes);
  LabelParts(spec, result);

  v1::ProbeMeasurements& out = *result.mutable_measurements();
  out.set_median_step_time_seconds(stats.median);
  out.set_min_step_time_seconds(stats.min);
  out.set_max_step_time_seconds(stats.max);
  out.set_step_time_cv(stats.cv);
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
  out.set_predicted_step_time_seconds(predicted.step_time_seconds);
  out.set_modelled_dp_seconds_per_step(modelled_dp);
  out.set_gpu_name(m.device.gpu_name);
  out.set_driver_version(m.device.driver_version);
  out.set_cuda_driver_version(m.device.cuda_driver_version);
  out.set_cuda_runtime_version(m.device.cuda_runtime_version);
  out.set_nccl_version(m.device.nccl_version);
  out.set_attention_kernel(m.attention_kernel);
  out.set_attention_fallback_reason(m.attention_fallback_reason);
  out.set_attention_backward_kernel(m.attention_backward_kernel);
  out.set_attention_backward_fallback_reason(m.attention_backward_fallback_reason);
  out.set_micro_batches_per_step(spec.micro_batches());

  std::string message = absl::StrFormat(
      "measured on %d x %s: %.4g s per step (CV %.2f%%), peak memory %.2f GiB measured on "
      "pipeline stage %d, %.2f GiB estimated",
      spec.layout().world_size(), m.device.gpu_name, stats.mean, 100 * stats.cv,
      m.peak_memory_bytes / kGiB, m.peak_memory_stage, out.estimated_peak_memory_bytes() / kGiB);
  if (!spec.micro_batch_counts().empty()) {
    absl::StrAppendFormat(&message,
                          "; the full step of %d micro-batches extrapolated from short steps of "
                          "%s micro-batches",
                          spec.micro_batches(), absl::StrJoin(spec.micro_batch_counts(), " and "));
  }
  if (modelled_dp > 0) {
    absl::StrAppendFormat(&message,
                          "; one of %d data-parallel replicas ran, the %.4g s of data-parallel "
                          "communication per step are modelled",
                          spec.config().dp(), modelled_dp);
  }
  result.set_message(message);
  return result;
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

v1::ProbeResult ResultFromError(const absl::Status& error) {
  v1::ProbeResult result;
  result.set_outcome(OutcomeForError(error));
  result.set_backend(kBackend);
  result.set_message(std::string(error.message()));
  return result;
}

}  // namespace paratune
