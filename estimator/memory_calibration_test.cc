#include "estimator/memory_calibration.h"

#include <cmath>

#include "gtest/gtest.h"

namespace paratune {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kCapacity = 80 * kGiB;

TEST(MemoryCalibrationTest, WithoutMeasurementsTheEstimateStandsWithThePriorsErrorBar) {
  const MemoryCalibration calibration(kCapacity);
  EXPECT_DOUBLE_EQ(calibration.ratio(), 1);
  EXPECT_DOUBLE_EQ(calibration.relative_error(), MemoryCalibration::kPriorRelativeError);
  const CalibratedMemory safe = calibration.Calibrate(60 * kGiB);
  EXPECT_DOUBLE_EQ(safe.peak_bytes, 60 * kGiB);
  EXPECT_NEAR(safe.high_bytes, 60 * kGiB * std::exp(0.1), 1);
  EXPECT_EQ(safe.verdict, MemoryVerdict::kSafe);
  // 78 GiB: the error bar straddles 80 GiB.
  EXPECT_EQ(calibration.Calibrate(78 * kGiB).verdict, MemoryVerdict::kRisky);
  EXPECT_EQ(calibration.Calibrate(90 * kGiB).verdict, MemoryVerdict::kOutOfMemory);
}

TEST(MemoryCalibrationTest, MeasurementsScaleTheEstimateAndNarrowTheBar) {
  MemoryCalibration calibration(kCapacity);
  // The framework allocates 10% beyond the formulas, consistently.
  for (double estimated : {40.0, 55.0, 62.0, 70.0}) {
    calibration.AddMeasurement(estimated * kGiB, 1.1 * estimated * kGiB);
  }
  EXPECT_EQ(calibration.measurements(), 4);
  EXPECT_NEAR(calibration.ratio(), 1.1, 1e-12);
  // No spread among them: the prior's weight over 3 + 3 degrees of freedom.
  EXPECT_NEAR(calibration.relative_error(), MemoryCalibration::kPriorRelativeError / std::sqrt(2),
              1e-12);
  // 70 GiB estimated is 77 GiB calibrated: it may not fit.
  const CalibratedMemory tight = calibration.Calibrate(70 * kGiB);
  EXPECT_NEAR(tight.peak_bytes, 77 * kGiB, 1);
  EXPECT_EQ(tight.verdict, MemoryVerdict::kRisky);
  // 79 GiB estimated, RISKY by the rule, is 86.9 GiB calibrated: out of memory even at the
  // bar's low end (/ exp(2 x 3.5%)).
  EXPECT_EQ(calibration.Calibrate(79 * kGiB).verdict, MemoryVerdict::kOutOfMemory);
  // Ignored: a probe that measured nothing.
  calibration.AddMeasurement(50 * kGiB, 0);
  EXPECT_EQ(calibration.measurements(), 4);
}

TEST(MemoryCalibrationTest, ScatteredMeasurementsWidenTheBar) {
  MemoryCalibration calibration(kCapacity);
  calibration.AddMeasurement(50 * kGiB, 45 * kGiB);
  calibration.AddMeasurement(50 * kGiB, 60 * kGiB);
  EXPECT_GT(calibration.relative_error(), MemoryCalibration::kPriorRelativeError);
}

TEST(MemoryCalibrationTest, AnOutOfMemoryRunBoundsEveryLargerEstimate) {
  MemoryCalibration calibration(kCapacity);
  calibration.AddOutOfMemory(70 * kGiB);
  calibration.AddOutOfMemory(74 * kGiB);
  EXPECT_EQ(calibration.out_of_memory(), 2);
  EXPECT_DOUBLE_EQ(calibration.smallest_out_of_memory_estimate(), 70 * kGiB);
  EXPECT_EQ(calibration.Calibrate(70 * kGiB).verdict, MemoryVerdict::kOutOfMemory);
  EXPECT_EQ(calibration.Calibrate(72 * kGiB).verdict, MemoryVerdict::kOutOfMemory);
  EXPECT_NE(calibration.Calibrate(69 * kGiB).verdict, MemoryVerdict::kOutOfMemory);
}

}  // namespace
}  // namespace paratune
