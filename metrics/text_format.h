// The Prometheus text exposition format, version 0.0.4
// (prometheus.io/docs/instrumenting/exposition_formats/): what /metrics answers.
#ifndef PARATUNE_METRICS_TEXT_FORMAT_H_
#define PARATUNE_METRICS_TEXT_FORMAT_H_

#include <string>
#include <vector>

#include "metrics/metric_family.h"

namespace paratune::metrics {

// The Content-Type of FormatText's output.
inline constexpr char kTextFormatContentType[] = "text/plain; version=0.0.4; charset=utf-8";

// # HELP and # TYPE lines, then one line per sample (histograms: _bucket lines with le
// labels ending in +Inf, then _sum and _count). HELP text escapes backslash and newline;
// label values also escape the double quote. Values print in the shortest form that reads
// back exactly, with +Inf, -Inf and NaN as Prometheus spells them. Families without samples
// print their HELP and TYPE lines only.
std::string FormatText(const std::vector<MetricFamily>& families);

}  // namespace paratune::metrics

#endif  // PARATUNE_METRICS_TEXT_FORMAT_H_
