#include "estimator/memory_calibration.h"

#include <algorithm>
#include <cmath>

namespace paratune {

void MemoryCalibration::AddMeasurement(double estimated_bytes, double measured_bytes) {
  if (!(estimated_bytes > 0) || !(measured_bytes > 0)) return;
  const double log_ratio = std::log(measured_bytes / estimated_bytes);
  ++measurements_;
  sum_log_ratio_ += log_ratio;
  sum_squared_log_ratio_ += log_ratio * log_ratio;
}

void MemoryCalibration::AddOutOfMemory(double estimated_bytes) {
  if (!(estimated_bytes > 0)) return;
  ++out_of_memory_;
  smallest_out_of_memory_ = std::min(smallest_out_of_memory_, estimated_bytes);
}

double MemoryCalibration::ratio() const {
  if (measurements_ == 0) return 1;
  return std::exp(sum_log_ratio_ / static_cast<double>(measurements_));
}

double MemoryCalibration::relative_error() const {
  // Pooled variance: the prior as kPriorObservations measurements of its spread, and the
  // measured ratios' squared deviations from their mean (n - 1 degrees of freedom).
  const double n = static_cast<double>(measurements_);
  double squared_deviations = 0;
  if (measurements_ > 1) {
    const double mean = sum_log_ratio_ / n;
    squared_deviations = std::max(0.0, sum_squared_log_ratio_ - n * mean * mean);
  }
  const double prior = kPriorObservations * kPriorRelativeError * kPriorRelativeError;
  const double degrees = kPriorObservations + std::max(0.0, n - 1);
  return std::sqrt((prior + squared_deviations) / degrees);
}

CalibratedMemory CalibrateEstimate(double estimated_bytes, double capacity_bytes, double ratio,
                                   double relative_error, double smallest_out_of_memory_bytes) {
  CalibratedMemory calibrated;
  calibrated.peak_bytes = estimated_bytes * ratio;
  const double spread = std::exp(MemoryCalibration::kBoundSigmas * relative_error);
  calibrated.low_bytes = calibrated.peak_bytes / spread;
  calibrated.high_bytes = calibrated.peak_bytes * spread;
  if (calibrated.low_bytes > capacity_bytes || estimated_bytes >= smallest_out_of_memory_bytes) {
    calibrated.verdict = MemoryVerdict::kOutOfMemory;
  } else if (calibrated.high_bytes <= capacity_bytes) {
    calibrated.verdict = MemoryVerdict::kSafe;
  } else {
    calibrated.verdict = MemoryVerdict::kRisky;
  }
  return calibrated;
}

CalibratedMemory MemoryCalibration::Calibrate(double estimated_bytes) const {
  return CalibrateEstimate(estimated_bytes, capacity_bytes_, ratio(), relative_error(),
                           smallest_out_of_memory_);
}

}  // namespace paratune
