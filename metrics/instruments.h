// The three instruments: a monotonically increasing counter, a gauge that goes up and down,
// and a histogram with fixed buckets. Each is one labelled child of a Family (family.h);
// code on hot paths keeps a reference to its child and updates it without locks (counter,
// gauge) or with one short lock (histogram).
#ifndef PARATUNE_METRICS_INSTRUMENTS_H_
#define PARATUNE_METRICS_INSTRUMENTS_H_

#include <atomic>
#include <cstdint>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "metrics/metric_family.h"

namespace paratune::metrics {

// Thread-safe.
class Counter {
 public:
  static constexpr MetricType kType = MetricType::kCounter;
  struct Options {};
  static absl::Status ValidateOptions(const Options&) { return absl::OkStatus(); }
  explicit Counter(const Options&) {}

  // Adds `amount`; negative and NaN amounts are ignored (a counter never goes down).
  void Increment(double amount = 1);
  double value() const { return value_.load(std::memory_order_relaxed); }
  std::variant<double, HistogramValue> Snapshot() const { return value(); }

 private:
  std::atomic<double> value_{0};
};

// Thread-safe.
class Gauge {
 public:
  static constexpr MetricType kType = MetricType::kGauge;
  struct Options {};
  static absl::Status ValidateOptions(const Options&) { return absl::OkStatus(); }
  explicit Gauge(const Options&) {}

  void Set(double value) { value_.store(value, std::memory_order_relaxed); }
  void Add(double amount);
  double value() const { return value_.load(std::memory_order_relaxed); }
  std::variant<double, HistogramValue> Snapshot() const { return value(); }

 private:
  std::atomic<double> value_{0};
};

// Thread-safe.
class Histogram {
 public:
  static constexpr MetricType kType = MetricType::kHistogram;
  struct Options {
    // Finite and strictly increasing; the +Inf bucket is implicit.
    std::vector<double> upper_bounds;
  };
  // INVALID_ARGUMENT naming the bound when the bounds are empty, not finite or not strictly
  // increasing.
  static absl::Status ValidateOptions(const Options& options);
  explicit Histogram(const Options& options);

  // Counts `value` in the first bucket whose bound is >= value; NaN is ignored.
  void Observe(double value);
  std::variant<double, HistogramValue> Snapshot() const;

 private:
  const std::vector<double> upper_bounds_;
  mutable absl::Mutex mu_;
  // Per bucket, not cumulative; the last entry counts values above every bound.
  std::vector<uint64_t> counts_ ABSL_GUARDED_BY(mu_);
  double sum_ ABSL_GUARDED_BY(mu_) = 0;
};

// Bounds start, start*factor, ... (count of them); for durations that span orders of
// magnitude. Each is rounded to 15 significant digits, so that ExponentialBuckets(0.05, 3, 2)
// is {0.05, 0.15}, not {0.05, 0.15000000000000002}. Requires start > 0, factor > 1,
// count >= 1.
std::vector<double> ExponentialBuckets(double start, double factor, int count);

}  // namespace paratune::metrics

#endif  // PARATUNE_METRICS_INSTRUMENTS_H_
