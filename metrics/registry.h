// The metrics of one binary: every collector, registered once at start-up, and the snapshot
// the /metrics endpoint renders.
#ifndef PARATUNE_METRICS_REGISTRY_H_
#define PARATUNE_METRICS_REGISTRY_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "metrics/collector.h"
#include "metrics/family.h"
#include "metrics/metric_family.h"

namespace paratune::metrics {

// Thread-safe.
class Registry {
 public:
  // Takes `collector` and returns it for the caller to use. INVALID_ARGUMENT for an invalid
  // descriptor; ALREADY_EXISTS naming a metric name that is registered already.
  template <typename T>
  absl::StatusOr<T*> Register(std::unique_ptr<T> collector) {
    T* registered = collector.get();
    if (absl::Status status = RegisterCollector(std::move(collector)); !status.ok()) return status;
    return registered;
  }

  // Create a family (Family::Create) and register it.
  absl::StatusOr<CounterFamily*> AddCounter(std::string name, std::string help,
                                            std::vector<std::string> label_names);
  absl::StatusOr<GaugeFamily*> AddGauge(std::string name, std::string help,
                                        std::vector<std::string> label_names);
  absl::StatusOr<HistogramFamily*> AddHistogram(std::string name, std::string help,
                                                std::vector<std::string> label_names,
                                                std::vector<double> upper_bounds);

  // Every family of every collector, ordered by name.
  std::vector<MetricFamily> Collect() const;

 private:
  absl::Status RegisterCollector(std::unique_ptr<Collector> collector);

  mutable absl::Mutex mu_;
  std::vector<std::unique_ptr<Collector>> collectors_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> names_ ABSL_GUARDED_BY(mu_);
};

}  // namespace paratune::metrics

#endif  // PARATUNE_METRICS_REGISTRY_H_
