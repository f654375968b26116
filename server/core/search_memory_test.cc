#include "server/core/search_memory.h"

#include <cmath>

#include "convert/search_view.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

v1::Candidate Probed(int64_t estimated_gib, v1::ProbeOutcome outcome, int64_t measured_gib) {
  v1::Candidate candidate;
  candidate.mutable_memory()->set_peak_bytes(estimated_gib * kGiB);
  candidate.mutable_memory()->set_capacity_bytes(80 * kGiB);
  candidate.set_state(v1::CANDIDATE_PROBED);
  candidate.mutable_probe_result()->set_outcome(outcome);
  candidate.mutable_probe_result()->set_peak_memory_bytes(measured_gib * kGiB);
  return candidate;
}

TEST(SearchMemoryTest, ProbesCalibrateEveryCandidatesEstimate) {
  v1::Search search;
  *search.add_candidates() = Probed(50, v1::PROBE_OK, 55);
  *search.add_candidates() = Probed(60, v1::PROBE_OK, 66);
  *search.add_candidates() = Probed(75, v1::PROBE_OUT_OF_MEMORY, 0);
  // Not probed yet: calibrated only.
  v1::Candidate& unprobed = *search.add_candidates();
  unprobed = Probed(70, v1::PROBE_OK, 0);
  unprobed.set_state(v1::CANDIDATE_QUEUED);
  unprobed.clear_probe_result();
  SetMemoryCalibration(FirstProbesCalibration(search), search);
  AddCalibratedMemory(search);

  const v1::MemoryCalibrationSummary& summary = search.memory_calibration();
  EXPECT_EQ(summary.measurements(), 2);
  EXPECT_EQ(summary.out_of_memory(), 1);
  EXPECT_NEAR(summary.ratio(), 1.1, 1e-9);
  EXPECT_EQ(summary.smallest_out_of_memory_bytes(), 75 * kGiB);
  EXPECT_NEAR(static_cast<double>(search.candidates(3).calibrated_memory().peak_bytes()),
              77.0 * kGiB, 2);
  EXPECT_EQ(search.candidates(3).calibrated_memory().verdict(), v1::RISKY);
  EXPECT_EQ(search.candidates(2).calibrated_memory().verdict(), v1::OUT_OF_MEMORY);
  EXPECT_EQ(search.candidates(0).calibrated_memory().verdict(), v1::SAFE);
}

TEST(SearchMemoryTest, AConfirmedCandidateCountsOnceAndAReplicaProbeAgainstItsOwnEstimate) {
  v1::Search search;
  v1::Candidate& confirmed = *search.add_candidates() = Probed(50, v1::PROBE_OK, 60);
  *confirmed.mutable_screening_result() = confirmed.probe_result();
  confirmed.set_state(v1::CANDIDATE_QUEUED);  // its confirmation is queued
  // A replica-scope probe ran fewer data-parallel replicas: its own estimate was 60 GiB.
  v1::Candidate& replica = *search.add_candidates() = Probed(50, v1::PROBE_OK, 66);
  replica.mutable_probe_result()->mutable_measurements()->set_estimated_peak_memory_bytes(60 *
                                                                                          kGiB);
  SetMemoryCalibration(FirstProbesCalibration(search), search);
  AddCalibratedMemory(search);
  EXPECT_EQ(search.memory_calibration().measurements(), 2);
  EXPECT_NEAR(search.memory_calibration().ratio(), std::sqrt(1.2 * 1.1), 1e-9);
}

TEST(SearchMemoryTest, ACandidateThatRanFitsWhateverTheBoundOfOneThatRanOut) {
  v1::Search search;
  *search.add_candidates() = Probed(70, v1::PROBE_OUT_OF_MEMORY, 0);
  *search.add_candidates() = Probed(72, v1::PROBE_OK, 71);
  SetMemoryCalibration(FirstProbesCalibration(search), search);
  AddCalibratedMemory(search);
  EXPECT_EQ(search.candidates(0).calibrated_memory().verdict(), v1::OUT_OF_MEMORY);
  EXPECT_EQ(search.candidates(1).calibrated_memory().verdict(), v1::SAFE);
}

TEST(SearchMemoryTest, FailuresOtherThanOutOfMemorySayNothingOfMemory) {
  MemoryCalibration calibration(80.0 * kGiB);
  v1::ProbeResult crash;
  crash.set_outcome(v1::PROBE_CRASH);
  AddProbeMemory(crash, 70.0 * kGiB, calibration);
  EXPECT_EQ(calibration.measurements() + calibration.out_of_memory(), 0);
}

}  // namespace
}  // namespace paratune
