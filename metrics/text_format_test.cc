#include "metrics/text_format.h"

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace paratune::metrics {
namespace {

TEST(FormatTextTest, WritesCountersAndGaugesWithLabels) {
  const std::vector<MetricFamily> families = {
      {{"paratune_probes_total", "Probes finished.", MetricType::kCounter, {"backend", "outcome"}},
       {Sample{{"sim", "ok"}, 12.0}, Sample{{"sim", "timeout"}, 0.0}}},
      {{"paratune_queue_depth", "Probes queued.", MetricType::kGauge, {}}, {Sample{{}, 3.0}}},
  };
  EXPECT_EQ(FormatText(families),
            "# HELP paratune_probes_total Probes finished.\n"
            "# TYPE paratune_probes_total counter\n"
            "paratune_probes_total{backend=\"sim\",outcome=\"ok\"} 12\n"
            "paratune_probes_total{backend=\"sim\",outcome=\"timeout\"} 0\n"
            "# HELP paratune_queue_depth Probes queued.\n"
            "# TYPE paratune_queue_depth gauge\n"
            "paratune_queue_depth 3\n");
}

TEST(FormatTextTest, EscapesHelpAndLabelValues) {
  const std::vector<MetricFamily> families = {
      {{"g", "a \\ back\nslash \"quoted\"", MetricType::kGauge, {"path"}},
       {Sample{{"C:\\dir \"x\"\nnext"}, 1.0}}},
  };
  // HELP escapes backslash and newline only; label values also escape the double quote.
  EXPECT_EQ(FormatText(families),
            "# HELP g a \\\\ back\\nslash \"quoted\"\n"
            "# TYPE g gauge\n"
            "g{path=\"C:\\\\dir \\\"x\\\"\\nnext\"} 1\n");
}

TEST(FormatTextTest, WritesHistogramBucketsSumAndCount) {
  HistogramValue histogram;
  histogram.upper_bounds = {0.5, 2};
  histogram.cumulative_counts = {1, 3};
  histogram.sum = 4.25;
  histogram.count = 4;
  const std::vector<MetricFamily> families = {
      {{"d_seconds", "Durations.", MetricType::kHistogram, {"backend"}},
       {Sample{{"sim"}, histogram}}},
  };
  EXPECT_EQ(FormatText(families),
            "# HELP d_seconds Durations.\n"
            "# TYPE d_seconds histogram\n"
            "d_seconds_bucket{backend=\"sim\",le=\"0.5\"} 1\n"
            "d_seconds_bucket{backend=\"sim\",le=\"2\"} 3\n"
            "d_seconds_bucket{backend=\"sim\",le=\"+Inf\"} 4\n"
            "d_seconds_sum{backend=\"sim\"} 4.25\n"
            "d_seconds_count{backend=\"sim\"} 4\n");
}

TEST(FormatTextTest, WritesValuesExactlyAndSpecialValuesAsPrometheusDoes) {
  const MetricDescriptor descriptor{"g", "h", MetricType::kGauge, {"v"}};
  const std::vector<MetricFamily> families = {
      {descriptor,
       {Sample{{"a"}, 0.1}, Sample{{"b"}, 123456789012.0}, Sample{{"c"}, 1.0 / 3},
        Sample{{"d"}, std::numeric_limits<double>::infinity()},
        Sample{{"e"}, -std::numeric_limits<double>::infinity()},
        Sample{{"f"}, std::numeric_limits<double>::quiet_NaN()}, Sample{{"g"}, 2.5e-7}}},
  };
  EXPECT_EQ(FormatText(families),
            "# HELP g h\n"
            "# TYPE g gauge\n"
            "g{v=\"a\"} 0.1\n"
            "g{v=\"b\"} 123456789012\n"
            "g{v=\"c\"} 0.3333333333333333\n"
            "g{v=\"d\"} +Inf\n"
            "g{v=\"e\"} -Inf\n"
            "g{v=\"f\"} NaN\n"
            "g{v=\"g\"} 2.5e-07\n");
}

TEST(FormatTextTest, WritesBucketBoundsInTheShortestFormThatReadsBack) {
  HistogramValue histogram;
  // 0.1 + 0.2 is not 0.3: its shortest exact form has 17 digits, and prints so.
  histogram.upper_bounds = {0.15, 0.1 + 0.2, 2952.45, 1e-05};
  std::sort(histogram.upper_bounds.begin(), histogram.upper_bounds.end());
  histogram.cumulative_counts = {0, 0, 0, 0};
  const std::vector<MetricFamily> families = {
      {{"d", "h", MetricType::kHistogram, {}}, {Sample{{}, histogram}}}};
  EXPECT_EQ(FormatText(families),
            "# HELP d h\n"
            "# TYPE d histogram\n"
            "d_bucket{le=\"1e-05\"} 0\n"
            "d_bucket{le=\"0.15\"} 0\n"
            "d_bucket{le=\"0.30000000000000004\"} 0\n"
            "d_bucket{le=\"2952.45\"} 0\n"
            "d_bucket{le=\"+Inf\"} 0\n"
            "d_sum 0\n"
            "d_count 0\n");
}

TEST(FormatTextTest, WritesHelpAndTypeForAFamilyWithoutSamples) {
  const std::vector<MetricFamily> families = {
      {{"c_total", "Nothing yet.", MetricType::kCounter, {"k"}}, {}}};
  EXPECT_EQ(FormatText(families), "# HELP c_total Nothing yet.\n# TYPE c_total counter\n");
}

}  // namespace
}  // namespace paratune::metrics
