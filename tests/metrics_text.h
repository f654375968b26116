// Reading the Prometheus text format back in tests: which metric names an exposition holds,
// and which paratune_* names a query or a deployment file refers to.
#ifndef PARATUNE_TESTS_METRICS_TEXT_H_
#define PARATUNE_TESTS_METRICS_TEXT_H_

#include <set>
#include <string>

#include "absl/status/statusor.h"

namespace paratune {

// Every family name (# TYPE lines) and sample name (with _bucket, _sum, _count) in a
// /metrics response.
std::set<std::string> ExposedMetricNames(const std::string& exposition);

// Every paratune_* identifier in `text` (PromQL, a dashboard, a rules file).
std::set<std::string> ReferencedMetricNames(const std::string& text);

// The value of sample `name_and_labels` (as printed, e.g. `x_total{a="b"}`) in an
// exposition. NOT_FOUND when absent.
absl::StatusOr<double> SampleValue(const std::string& exposition,
                                   const std::string& name_and_labels);

// The contents of a file. NOT_FOUND naming it when it cannot be read.
absl::StatusOr<std::string> ReadTextFile(const std::string& path);

}  // namespace paratune

#endif  // PARATUNE_TESTS_METRICS_TEXT_H_
