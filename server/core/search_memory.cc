#include "server/core/search_memory.h"

#include <cmath>
#include <cstdint>

namespace paratune {

void AddProbeMemory(const v1::ProbeResult& result, double estimated_bytes,
                    MemoryCalibration& calibration) {
  if (result.outcome() == v1::PROBE_OUT_OF_MEMORY) {
    calibration.AddOutOfMemory(estimated_bytes);
  } else if (result.outcome() == v1::PROBE_OK && result.peak_memory_bytes() > 0) {
    const double backend_estimate = result.measurements().estimated_peak_memory_bytes();
    calibration.AddMeasurement(backend_estimate > 0 ? backend_estimate : estimated_bytes,
                               static_cast<double>(result.peak_memory_bytes()));
  }
}

MemoryCalibration FirstProbesCalibration(const v1::Search& search) {
  MemoryCalibration calibration(
      static_cast<double>(search.candidates(0).memory().capacity_bytes()));
  for (const v1::Candidate& candidate : search.candidates()) {
    const v1::ProbeResult* first = nullptr;
    if (candidate.has_screening_result()) {
      first = &candidate.screening_result();
    } else if (candidate.state() == v1::CANDIDATE_PROBED) {
      first = &candidate.probe_result();
    }
    if (first != nullptr) {
      AddProbeMemory(*first, static_cast<double>(candidate.memory().peak_bytes()), calibration);
    }
  }
  return calibration;
}

void SetMemoryCalibration(const MemoryCalibration& calibration, v1::Search& search) {
  v1::MemoryCalibrationSummary& summary = *search.mutable_memory_calibration();
  summary.set_measurements(calibration.measurements());
  summary.set_out_of_memory(calibration.out_of_memory());
  summary.set_ratio(calibration.ratio());
  summary.set_relative_error(calibration.relative_error());
  const double smallest = calibration.smallest_out_of_memory_estimate();
  summary.set_smallest_out_of_memory_bytes(std::isfinite(smallest) ? std::llround(smallest) : 0);
}

}  // namespace paratune
