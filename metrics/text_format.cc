#include "metrics/text_format.h"

#include <charconv>
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/string_view.h"

namespace paratune::metrics {
namespace {

const char* TypeName(MetricType type) {
  switch (type) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
  }
  return "untyped";
}

std::string FormatValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  // Without a precision, std::to_chars writes the shortest text that reads back as the same
  // double: counts print as integers, 0.1 as 0.1, 2.5e-07 in scientific form when shorter.
  char text[32];
  const std::to_chars_result written = std::to_chars(text, text + sizeof(text), value);
  return std::string(text, written.ptr);
}

std::string EscapeHelp(absl::string_view help) {
  return absl::StrReplaceAll(help, {{"\\", "\\\\"}, {"\n", "\\n"}});
}

std::string EscapeLabelValue(absl::string_view value) {
  return absl::StrReplaceAll(value, {{"\\", "\\\\"}, {"\"", "\\\""}, {"\n", "\\n"}});
}

// {a="x",b="y"} with `extra` (e.g. le="0.5") last; empty when there are no labels.
std::string FormatLabels(const MetricDescriptor& descriptor, const std::vector<std::string>& values,
                         absl::string_view extra = "") {
  std::string labels;
  for (size_t i = 0; i < descriptor.label_names.size() && i < values.size(); ++i) {
    absl::StrAppend(&labels, labels.empty() ? "" : ",", descriptor.label_names[i], "=\"",
                    EscapeLabelValue(values[i]), "\"");
  }
  if (!extra.empty()) absl::StrAppend(&labels, labels.empty() ? "" : ",", extra);
  return labels.empty() ? "" : absl::StrCat("{", labels, "}");
}

void AppendHistogram(const MetricDescriptor& descriptor, const Sample& sample,
                     const HistogramValue& histogram, std::string* out) {
  const std::string& name = descriptor.name;
  for (size_t i = 0; i < histogram.upper_bounds.size(); ++i) {
    const std::string le = absl::StrCat("le=\"", FormatValue(histogram.upper_bounds[i]), "\"");
    absl::StrAppend(out, name, "_bucket", FormatLabels(descriptor, sample.label_values, le), " ",
                    histogram.cumulative_counts[i], "\n");
  }
  absl::StrAppend(out, name, "_bucket",
                  FormatLabels(descriptor, sample.label_values, "le=\"+Inf\""), " ",
                  histogram.count, "\n");
  const std::string labels = FormatLabels(descriptor, sample.label_values);
  absl::StrAppend(out, name, "_sum", labels, " ", FormatValue(histogram.sum), "\n");
  absl::StrAppend(out, name, "_count", labels, " ", histogram.count, "\n");
}

}  // namespace

std::string FormatText(const std::vector<MetricFamily>& families) {
  std::string out;
  for (const MetricFamily& family : families) {
    const MetricDescriptor& descriptor = family.descriptor;
    absl::StrAppend(&out, "# HELP ", descriptor.name, " ", EscapeHelp(descriptor.help), "\n");
    absl::StrAppend(&out, "# TYPE ", descriptor.name, " ", TypeName(descriptor.type), "\n");
    for (const Sample& sample : family.samples) {
      if (const auto* histogram = std::get_if<HistogramValue>(&sample.value)) {
        AppendHistogram(descriptor, sample, *histogram, &out);
      } else {
        absl::StrAppend(&out, descriptor.name, FormatLabels(descriptor, sample.label_values), " ",
                        FormatValue(std::get<double>(sample.value)), "\n");
      }
    }
  }
  return out;
}

}  // namespace paratune::metrics
