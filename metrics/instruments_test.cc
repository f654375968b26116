#include "metrics/instruments.h"

#include <cmath>
#include <limits>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace paratune::metrics {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(CounterTest, OnlyGoesUp) {
  Counter counter({});
  counter.Increment();
  counter.Increment(2.5);
  counter.Increment(-4);
  counter.Increment(std::nan(""));
  EXPECT_EQ(counter.value(), 3.5);
}

TEST(CounterTest, CountsEveryIncrementFromManyThreads) {
  Counter counter({});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) counter.Increment();
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(counter.value(), 40000);
}

TEST(GaugeTest, SetsAndAdds) {
  Gauge gauge({});
  gauge.Set(5);
  gauge.Add(-7);
  EXPECT_EQ(gauge.value(), -2);
}

TEST(HistogramTest, CountsCumulativelyWithInclusiveUpperBounds) {
  Histogram histogram({{0.5, 1, 10}});
  for (double value : {0.1, 0.5, 0.7, 1.0, 3.0, 50.0}) histogram.Observe(value);
  histogram.Observe(std::nan(""));
  const HistogramValue snapshot = std::get<HistogramValue>(histogram.Snapshot());
  EXPECT_THAT(snapshot.upper_bounds, ElementsAre(0.5, 1, 10));
  EXPECT_THAT(snapshot.cumulative_counts, ElementsAre(2, 4, 5));
  EXPECT_EQ(snapshot.count, 6);
  EXPECT_DOUBLE_EQ(snapshot.sum, 55.3);
}

TEST(HistogramTest, ValidatesBounds) {
  EXPECT_TRUE(Histogram::ValidateOptions({{0.1, 1}}).ok());
  EXPECT_EQ(Histogram::ValidateOptions({}).code(), absl::StatusCode::kInvalidArgument);
  const absl::Status unordered = Histogram::ValidateOptions({{1, 1}});
  EXPECT_EQ(unordered.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(unordered.message()), HasSubstr("upper_bounds[1] (1)"));
  EXPECT_FALSE(Histogram::ValidateOptions({{1, std::numeric_limits<double>::infinity()}}).ok());
}

TEST(ExponentialBucketsTest, MultipliesByTheFactor) {
  EXPECT_THAT(ExponentialBuckets(0.25, 2, 4), ElementsAre(0.25, 0.5, 1, 2));
}

TEST(ExponentialBucketsTest, BoundsAreTheDecimalProductsWithoutBinaryRoundingError) {
  // Multiplied in binary: 0.15000000000000002, 0.45000000000000007, 1.35, 4.050000000000001,
  // ... 2952.4500000000003.
  EXPECT_THAT(ExponentialBuckets(0.05, 3, 5), ElementsAre(0.05, 0.15, 0.45, 1.35, 4.05));
  EXPECT_EQ(ExponentialBuckets(0.05, 3, 11).back(), 2952.45);
}

}  // namespace
}  // namespace paratune::metrics
