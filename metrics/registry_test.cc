#include "metrics/registry.h"

#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace paratune::metrics {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A collector computing its family at collection time, like a binary's stats adapter.
class ConstantCollector : public Collector {
 public:
  std::vector<MetricDescriptor> Describe() const override {
    return {MetricDescriptor{"a_gauge", "a constant", MetricType::kGauge, {}}};
  }
  std::vector<MetricFamily> Collect() const override {
    return {MetricFamily{Describe()[0], {Sample{{}, 42.0}}}};
  }
};

std::vector<std::string> Names(const std::vector<MetricFamily>& families) {
  std::vector<std::string> names;
  for (const MetricFamily& family : families) names.push_back(family.descriptor.name);
  return names;
}

TEST(RegistryTest, CollectsEveryFamilyOrderedByName) {
  Registry registry;
  absl::StatusOr<CounterFamily*> counter =
      registry.AddCounter("z_events_total", "events", {"kind"});
  ASSERT_TRUE(counter.ok()) << counter.status();
  ASSERT_TRUE(registry.Register(std::make_unique<ConstantCollector>()).ok());
  ASSERT_TRUE(registry.AddHistogram("m_seconds", "durations", {}, {1, 2}).ok());
  (*counter)->WithLabels({"x"}).Increment(3);

  const std::vector<MetricFamily> families = registry.Collect();
  EXPECT_THAT(Names(families), ElementsAre("a_gauge", "m_seconds", "z_events_total"));
  ASSERT_EQ(families[2].samples.size(), 1);
  EXPECT_THAT(families[2].samples[0].label_values, ElementsAre("x"));
  EXPECT_EQ(std::get<double>(families[2].samples[0].value), 3);
}

TEST(RegistryTest, RefusesADuplicateName) {
  Registry registry;
  ASSERT_TRUE(registry.AddGauge("a_gauge", "first", {}).ok());
  const absl::StatusOr<ConstantCollector*> second =
      registry.Register(std::make_unique<ConstantCollector>());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(std::string(second.status().message()), HasSubstr("(\"a_gauge\")"));
}

TEST(RegistryTest, RefusesInvalidFamilies) {
  Registry registry;
  EXPECT_EQ(registry.AddCounter("events", "no _total", {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  const absl::StatusOr<HistogramFamily*> histogram =
      registry.AddHistogram("d_seconds", "durations", {}, {2, 1});
  EXPECT_EQ(histogram.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(histogram.status().message()), HasSubstr("d_seconds: upper_bounds[1]"));
  EXPECT_TRUE(registry.Collect().empty());
}

TEST(FamilyTest, ReturnsTheSameChildForTheSameLabels) {
  absl::StatusOr<std::unique_ptr<GaugeFamily>> family =
      GaugeFamily::Create("g", "a gauge", {"a", "b"});
  ASSERT_TRUE(family.ok());
  Gauge& child = (*family)->WithLabels({"1", "2"});
  child.Set(7);
  EXPECT_EQ(&(*family)->WithLabels({"1", "2"}), &child);
  EXPECT_EQ((*family)->Collect()[0].samples.size(), 1);
}

TEST(FamilyDeathTest, AbortsOnALabelCountMismatch) {
  absl::StatusOr<std::unique_ptr<CounterFamily>> family =
      CounterFamily::Create("c_total", "a counter", {"a"});
  ASSERT_TRUE(family.ok());
  EXPECT_DEATH((*family)->WithLabels({"1", "2"}), "c_total has labels \\(a\\) but was given 2");
}

}  // namespace
}  // namespace paratune::metrics
