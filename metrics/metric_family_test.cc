#include "metrics/metric_family.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace paratune::metrics {
namespace {

using ::testing::HasSubstr;

MetricDescriptor Descriptor(std::string name, MetricType type,
                            std::vector<std::string> labels = {}) {
  return MetricDescriptor{std::move(name), "help", type, std::move(labels)};
}

void ExpectInvalid(const MetricDescriptor& descriptor, const std::string& message) {
  const absl::Status status = ValidateDescriptor(descriptor);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << descriptor.name;
  EXPECT_THAT(std::string(status.message()), HasSubstr(message));
}

TEST(ValidateDescriptorTest, AcceptsConventionalNames) {
  EXPECT_TRUE(ValidateDescriptor(
                  Descriptor("paratune_probes_total", MetricType::kCounter, {"backend", "outcome"}))
                  .ok());
  EXPECT_TRUE(ValidateDescriptor(Descriptor("ns:rule_gauge", MetricType::kGauge)).ok());
  EXPECT_TRUE(
      ValidateDescriptor(Descriptor("paratune_probe_duration_seconds", MetricType::kHistogram))
          .ok());
}

TEST(ValidateDescriptorTest, RejectsBadNamesNamingTheValue) {
  ExpectInvalid(Descriptor("", MetricType::kGauge), "metric name (\"\")");
  ExpectInvalid(Descriptor("1abc", MetricType::kGauge), "metric name (\"1abc\")");
  ExpectInvalid(Descriptor("probe-count", MetricType::kGauge), "metric name (\"probe-count\")");
  ExpectInvalid(Descriptor("probes", MetricType::kCounter), "counter name (\"probes\")");
  ExpectInvalid(Descriptor("probes_total", MetricType::kGauge), "not a counter");
}

TEST(ValidateDescriptorTest, RejectsBadLabelNames) {
  ExpectInvalid(Descriptor("g", MetricType::kGauge, {"a:b"}), "(\"a:b\")");
  ExpectInvalid(Descriptor("g", MetricType::kGauge, {"__name"}), "(\"__name\")");
  ExpectInvalid(Descriptor("g", MetricType::kGauge, {"x", "x"}), "(\"x\") is listed twice");
  ExpectInvalid(Descriptor("h", MetricType::kHistogram, {"le"}), "reserved");
}

TEST(ValidateDescriptorTest, RequiresHelp) {
  MetricDescriptor descriptor = Descriptor("g", MetricType::kGauge);
  descriptor.help.clear();
  ExpectInvalid(descriptor, "help of g");
}

}  // namespace
}  // namespace paratune::metrics
