// A source of metric families for a Registry: the instrument families in family.h, or a
// binary's adapter that turns a library's plain stats struct into families at scrape time.
#ifndef PARATUNE_METRICS_COLLECTOR_H_
#define PARATUNE_METRICS_COLLECTOR_H_

#include <vector>

#include "metrics/metric_family.h"

namespace paratune::metrics {

// Implementations must be thread-safe: Collect runs on the HTTP server's threads.
class Collector {
 public:
  virtual ~Collector() = default;
  // The families Collect returns, fixed for the collector's life.
  virtual std::vector<MetricDescriptor> Describe() const = 0;
  // The current values: one family per descriptor of Describe, in the same order, each
  // sample with one value per label name.
  virtual std::vector<MetricFamily> Collect() const = 0;
};

}  // namespace paratune::metrics

#endif  // PARATUNE_METRICS_COLLECTOR_H_
