#include "worker/probe/measurement_layout.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace paratune {
namespace {

absl::Status CheckCount(const char* field, int64_t count, int64_t expected) {
  if (count == expected) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(field, " has ", count, " values; the layout holds ", expected));
}

}  // namespace

absl::StatusOr<MeasurementLayout> MeasurementLayout::Create(int64_t steps, int64_t stages) {
  if (steps < 0) return absl::InvalidArgumentError(absl::StrCat("steps (", steps, ") < 0"));
  if (stages < 1) return absl::InvalidArgumentError(absl::StrCat("stages (", stages, ") < 1"));
  return MeasurementLayout(steps, stages);
}

absl::StatusOr<std::vector<double>> MeasurementLayout::Pack(
    const RankMeasurements& measurements) const {
  const int64_t collectives = static_cast<int64_t>(measurements.collective_seconds.size());
  for (const absl::Status& status :
       {CheckCount("step_seconds", static_cast<int64_t>(measurements.step_seconds.size()), steps_),
        CheckCount("stage_peak_bytes", static_cast<int64_t>(measurements.stage_peak_bytes.size()),
                   stages_)}) {
    if (!status.ok()) return status;
  }
  if (collectives > kMostCollectives) {
    return absl::InvalidArgumentError(absl::StrCat("collective_seconds has ", collectives,
                                                   " values; the layout holds ", kMostCollectives));
  }
  std::vector<double> values(size(), 0.0);
  auto out = values.begin();
  out = std::copy(measurements.step_seconds.begin(), measurements.step_seconds.end(), out);
  out = std::copy(measurements.phase_seconds.begin(), measurements.phase_seconds.end(), out);
  // The places of collectives not benchmarked stay 0.
  std::copy(measurements.collective_seconds.begin(), measurements.collective_seconds.end(), out);
  out += kMostCollectives;
  std::copy(measurements.stage_peak_bytes.begin(), measurements.stage_peak_bytes.end(), out);
  return values;
}

absl::StatusOr<RankMeasurements> MeasurementLayout::Unpack(
    const std::vector<double>& values) const {
  const absl::Status count = CheckCount("values", static_cast<int64_t>(values.size()), size());
  if (!count.ok()) return count;
  RankMeasurements measurements;
  auto in = values.begin();
  measurements.step_seconds.assign(in, in + steps_);
  in += steps_;
  std::copy(in, in + kPhases, measurements.phase_seconds.begin());
  in += kPhases;
  measurements.collective_seconds.assign(in, in + kMostCollectives);
  in += kMostCollectives;
  measurements.stage_peak_bytes.assign(in, in + stages_);
  return measurements;
}

}  // namespace paratune
