#include "worker/worker_metrics.h"

#include "common/status_macros.h"
#include "metrics/enum_label.h"
#include "metrics/instruments.h"

namespace paratune {
namespace {

std::string OutcomeLabel(v1::ProbeOutcome outcome) {
  return metrics::EnumLabel(v1::ProbeOutcome_Name(outcome), "PROBE_");
}

}  // namespace

absl::StatusOr<std::unique_ptr<WorkerMetrics>> WorkerMetrics::Create(
    metrics::Registry& registry, const std::vector<std::string>& backends, int64_t gpus) {
  std::unique_ptr<WorkerMetrics> worker_metrics(new WorkerMetrics());
  PT_ASSIGN_OR_RETURN(worker_metrics->probes_,
                      registry.AddCounter("paratune_worker_probes_total",
                                          "Probes this worker ran, by backend and outcome; "
                                          "every attempt, infrastructure errors included.",
                                          {"backend", "outcome"}));
  // Probes run from seconds (sim) to the 600 s default deadline and beyond.
  PT_ASSIGN_OR_RETURN(
      worker_metrics->durations_,
      registry.AddHistogram("paratune_worker_probe_duration_seconds",
                            "Wall time of the probes this worker ran, by backend and outcome.",
                            {"backend", "outcome"}, metrics::ExponentialBuckets(0.05, 3, 11)));
  PT_ASSIGN_OR_RETURN(worker_metrics->gpu_seconds_,
                      registry.AddCounter("paratune_worker_probe_gpu_seconds_total",
                                          "GPU-seconds occupied by this worker's probes: wall "
                                          "time x GPUs of the probe, by backend.",
                                          {"backend"}));
  PT_ASSIGN_OR_RETURN(metrics::GaugeFamily * gpu_gauge,
                      registry.AddGauge("paratune_worker_gpus", "GPUs this worker offers.", {}));
  gpu_gauge->WithLabels({}).Set(static_cast<double>(gpus));
  for (const std::string& backend : backends) {
    worker_metrics->gpu_seconds_->WithLabels({backend});
    for (int outcome = v1::ProbeOutcome_MIN; outcome <= v1::ProbeOutcome_MAX; ++outcome) {
      if (!v1::ProbeOutcome_IsValid(outcome) || outcome == v1::PROBE_OUTCOME_UNSPECIFIED) continue;
      const std::string label = OutcomeLabel(static_cast<v1::ProbeOutcome>(outcome));
      worker_metrics->probes_->WithLabels({backend, label});
      worker_metrics->durations_->WithLabels({backend, label});
    }
  }
  return worker_metrics;
}

void WorkerMetrics::RecordProbe(const v1::ProbeAssignment& assignment,
                                const v1::ProbeResult& result) {
  const std::string outcome = OutcomeLabel(result.outcome());
  probes_->WithLabels({assignment.backend(), outcome}).Increment();
  durations_->WithLabels({assignment.backend(), outcome}).Observe(result.wall_seconds());
  gpu_seconds_->WithLabels({assignment.backend()})
      .Increment(result.wall_seconds() * static_cast<double>(ProbeGpus(assignment)));
}

int64_t ProbeGpus(const v1::ProbeAssignment& assignment) {
  const v1::ParallelConfig& config = assignment.config();
  const int64_t replica =
      config.tensor_parallel() * config.pipeline_parallel() * config.context_parallel();
  return assignment.scope() == v1::PROBE_SCOPE_FULL ? replica * config.data_parallel() : replica;
}

}  // namespace paratune
