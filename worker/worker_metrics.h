// The worker daemon's metrics (DESIGN.md §9): probes it ran by backend and outcome, how long
// they took and the GPU-seconds they used. Fed by WorkerDaemon::Options::on_probe_finished.
#ifndef PARATUNE_WORKER_WORKER_METRICS_H_
#define PARATUNE_WORKER_WORKER_METRICS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "metrics/family.h"
#include "metrics/registry.h"
#include "proto/probe.pb.h"

namespace paratune {

// Thread-safe.
class WorkerMetrics {
 public:
  // Registers the worker's families in `registry` (which must outlive this), with a zero
  // series for every outcome of every backend in `backends`.
  static absl::StatusOr<std::unique_ptr<WorkerMetrics>> Create(
      metrics::Registry& registry, const std::vector<std::string>& backends, int64_t gpus);

  // Counts one finished probe.
  void RecordProbe(const v1::ProbeAssignment& assignment, const v1::ProbeResult& result);

 private:
  WorkerMetrics() = default;

  metrics::CounterFamily* probes_ = nullptr;
  metrics::HistogramFamily* durations_ = nullptr;
  metrics::CounterFamily* gpu_seconds_ = nullptr;
};

// GPUs a probe occupies: every rank of the configuration for PROBE_SCOPE_FULL, one
// data-parallel replica (tp x pp x cp) otherwise.
int64_t ProbeGpus(const v1::ProbeAssignment& assignment);

}  // namespace paratune

#endif  // PARATUNE_WORKER_WORKER_METRICS_H_
