// The scheduler's metrics (DESIGN.md §9): a Collector that reads SchedulerStats at every
// scrape and exports searches, candidates, probe results, the queue, workers and the best
// measured throughput. docs/operations.md says what each one means.
#ifndef PARATUNE_SERVER_CORE_SCHEDULER_METRICS_H_
#define PARATUNE_SERVER_CORE_SCHEDULER_METRICS_H_

#include <functional>
#include <utility>
#include <vector>

#include "metrics/collector.h"
#include "metrics/metric_family.h"
#include "server/core/scheduler_stats.h"

namespace paratune {

// Thread-safe when `stats` is.
class SchedulerMetrics final : public metrics::Collector {
 public:
  // `stats` is called once per scrape, e.g. [&server] { return server.stats(); }.
  explicit SchedulerMetrics(std::function<SchedulerStats()> stats) : stats_(std::move(stats)) {}

  std::vector<metrics::MetricDescriptor> Describe() const override;
  std::vector<metrics::MetricFamily> Collect() const override;

 private:
  const std::function<SchedulerStats()> stats_;
};

}  // namespace paratune

#endif  // PARATUNE_SERVER_CORE_SCHEDULER_METRICS_H_
