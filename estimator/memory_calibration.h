// A search's calibration of the memory estimate from the memory its probes measured
// (issue 12, docs/memory.md). The estimator's formulas (memory_model.h) reproduce the
// paper's reference values, but a framework allocates beyond them (allocator caching and
// fragmentation, communication buffers, workspace), and by a factor that depends on the
// framework and the cluster more than on the configuration. So a search measures it:
//   - a probe that measured its peak memory gives a ratio measured / estimated;
//   - a probe that ran out of memory gives a bound: its real peak exceeded capacity, and so
//     does that of every configuration estimated to need at least as much (the estimate
//     ranks configurations well even where its absolute value is off).
// The calibrated estimate of a configuration is its estimate times the geometric mean of
// the measured ratios, with an error bar of `kBoundSigmas` times their spread (pooled with a
// prior, as AdaptivePolicy pools its model error), and a verdict that says whether it fits.
#ifndef PARATUNE_ESTIMATOR_MEMORY_CALIBRATION_H_
#define PARATUNE_ESTIMATOR_MEMORY_CALIBRATION_H_

#include <cstdint>
#include <limits>

#include "estimator/memory_model.h"

namespace paratune {

// A calibrated estimate of one configuration's peak memory per GPU.
struct CalibratedMemory {
  double peak_bytes = 0;  // estimate x ratio
  double low_bytes = 0;   // the error bar's ends
  double high_bytes = 0;
  // kSafe: fits even at high_bytes; kOutOfMemory: does not fit even at low_bytes, or needs
  // at least the estimate of a configuration that ran out of memory; kRisky: in between.
  MemoryVerdict verdict = MemoryVerdict::kRisky;
};

// The calibrated estimate of a configuration estimated at `estimated_bytes` on GPUs of
// `capacity_bytes`, by a calibration of `ratio` (measured / estimated) and `relative_error`,
// after probes of which the smallest estimate that ran out of memory was
// `smallest_out_of_memory_bytes` (infinity when none did). MemoryCalibration::Calibrate is
// this with its own figures; a search's stored summary gives them back.
CalibratedMemory CalibrateEstimate(double estimated_bytes, double capacity_bytes, double ratio,
                                   double relative_error, double smallest_out_of_memory_bytes);

class MemoryCalibration {
 public:
  // Relative spread assumed before any measurement, and how many measurements it weighs as
  // when pooled with the measured spread. An assumption, not a fit: no public table reports
  // measured peak memory beside a configuration (docs/memory.md); the search's own
  // measurements take over as they come.
  static constexpr double kPriorRelativeError = 0.05;
  static constexpr double kPriorObservations = 3;
  // Half-width of the error bar, in relative errors (about 95%).
  static constexpr double kBoundSigmas = 2;  // used by CalibrateEstimate

  // `capacity_bytes`: one GPU's memory (> 0).
  explicit MemoryCalibration(double capacity_bytes) : capacity_bytes_(capacity_bytes) {}

  // A probe of a configuration estimated at `estimated_bytes` (> 0) measured a peak of
  // `measured_bytes` (> 0). Others are ignored.
  void AddMeasurement(double estimated_bytes, double measured_bytes);
  // A probe of a configuration estimated at `estimated_bytes` (> 0) ran out of memory.
  void AddOutOfMemory(double estimated_bytes);

  int64_t measurements() const { return measurements_; }
  int64_t out_of_memory() const { return out_of_memory_; }
  // Geometric mean of measured / estimated; 1 without measurements.
  double ratio() const;
  // The ratio's relative error for one configuration: the spread of the measured ratios'
  // logarithms pooled with kPriorRelativeError as kPriorObservations measurements.
  double relative_error() const;
  // The smallest estimate that ran out of memory; infinity when none did.
  double smallest_out_of_memory_estimate() const { return smallest_out_of_memory_; }

  // The calibrated estimate of a configuration estimated at `estimated_bytes`.
  CalibratedMemory Calibrate(double estimated_bytes) const;

 private:
  const double capacity_bytes_;
  int64_t measurements_ = 0;
  double sum_log_ratio_ = 0;
  double sum_squared_log_ratio_ = 0;
  int64_t out_of_memory_ = 0;
  double smallest_out_of_memory_ = std::numeric_limits<double>::infinity();
};

}  // namespace paratune

#endif  // PARATUNE_ESTIMATOR_MEMORY_CALIBRATION_H_
