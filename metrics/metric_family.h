// What a metric is (its descriptor) and a snapshot of its values (a family of samples), in
// the Prometheus data model: a family has one name, help text, type and set of label names;
// each sample has one value per label name.
#ifndef PARATUNE_METRICS_METRIC_FAMILY_H_
#define PARATUNE_METRICS_METRIC_FAMILY_H_

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/status.h"

namespace paratune::metrics {

enum class MetricType { kCounter, kGauge, kHistogram };

struct MetricDescriptor {
  // [a-zA-Z_:][a-zA-Z0-9_:]*; counters end in _total (Prometheus naming conventions).
  std::string name;
  // One line for people; any UTF-8 (escaped on output).
  std::string help;
  MetricType type = MetricType::kGauge;
  // [a-zA-Z_][a-zA-Z0-9_]*, not starting with "__", distinct; histograms may not use "le".
  std::vector<std::string> label_names;
};

// OK, or INVALID_ARGUMENT naming the metric and the offending field and value.
absl::Status ValidateDescriptor(const MetricDescriptor& descriptor);

// A histogram's state: counts per bucket are cumulative (observations <= the bound), as the
// exposition format wants them; the +Inf bucket is `count`.
struct HistogramValue {
  // Finite, strictly increasing.
  std::vector<double> upper_bounds;
  // Same length as upper_bounds.
  std::vector<uint64_t> cumulative_counts;
  double sum = 0;
  uint64_t count = 0;
};

struct Sample {
  // One per descriptor label name, in the same order.
  std::vector<std::string> label_values;
  // double for counters and gauges, HistogramValue for histograms.
  std::variant<double, HistogramValue> value;
};

struct MetricFamily {
  MetricDescriptor descriptor;
  std::vector<Sample> samples;
};

}  // namespace paratune::metrics

#endif  // PARATUNE_METRICS_METRIC_FAMILY_H_
