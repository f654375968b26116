#include "metrics/instruments.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace paratune::metrics {
namespace {

void AtomicAdd(std::atomic<double>& target, double amount) {
  double current = target.load(std::memory_order_relaxed);
  while (!target.compare_exchange_weak(current, current + amount, std::memory_order_relaxed)) {
  }
}

// Products like 0.05 x 3 carry binary rounding (0.15000000000000002), which would print in
// every bucket's le label; bounds keep the 15 significant digits a double always holds.
constexpr int kBoundSignificantDigits = 15;

// The double nearest to `value` written with `digits` significant digits.
double RoundToSignificantDigits(double value, int digits) {
  char text[32];
  const std::to_chars_result written =
      std::to_chars(text, text + sizeof(text), value, std::chars_format::scientific, digits - 1);
  double rounded = value;
  std::from_chars(text, written.ptr, rounded);
  return rounded;
}

}  // namespace

void Counter::Increment(double amount) {
  if (!(amount >= 0)) return;
  AtomicAdd(value_, amount);
}

void Gauge::Add(double amount) { AtomicAdd(value_, amount); }

absl::Status Histogram::ValidateOptions(const Options& options) {
  const std::vector<double>& bounds = options.upper_bounds;
  if (bounds.empty()) {
    return absl::InvalidArgumentError("upper_bounds (none) must list at least one bound");
  }
  for (size_t i = 0; i < bounds.size(); ++i) {
    if (!std::isfinite(bounds[i]) || (i > 0 && bounds[i] <= bounds[i - 1])) {
      return absl::InvalidArgumentError(absl::StrCat("upper_bounds[", i, "] (", bounds[i],
                                                     ") must be finite and above the one before"));
    }
  }
  return absl::OkStatus();
}

Histogram::Histogram(const Options& options)
    : upper_bounds_(options.upper_bounds), counts_(options.upper_bounds.size() + 1, 0) {}

void Histogram::Observe(double value) {
  if (std::isnan(value)) return;
  const size_t bucket =
      std::lower_bound(upper_bounds_.begin(), upper_bounds_.end(), value) - upper_bounds_.begin();
  absl::MutexLock lock(&mu_);
  ++counts_[bucket];
  sum_ += value;
}

std::variant<double, HistogramValue> Histogram::Snapshot() const {
  HistogramValue snapshot;
  snapshot.upper_bounds = upper_bounds_;
  absl::MutexLock lock(&mu_);
  uint64_t cumulative = 0;
  for (size_t i = 0; i < upper_bounds_.size(); ++i) {
    cumulative += counts_[i];
    snapshot.cumulative_counts.push_back(cumulative);
  }
  snapshot.count = cumulative + counts_.back();
  snapshot.sum = sum_;
  return snapshot;
}

std::vector<double> ExponentialBuckets(double start, double factor, int count) {
  std::vector<double> bounds;
  double bound = start;
  for (int i = 0; i < count; ++i) {
    bounds.push_back(RoundToSignificantDigits(bound, kBoundSignificantDigits));
    bound *= factor;
  }
  return bounds;
}

}  // namespace paratune::metrics
