#include "worker/probe/measurement_layout.h"

#include "gtest/gtest.h"

namespace paratune {
namespace {

RankMeasurements Sample() {
  RankMeasurements m;
  m.step_seconds = {1.5, 1.25, 1.0};
  for (size_t i = 0; i < m.phase_seconds.size(); ++i) m.phase_seconds[i] = 0.125 * (i + 1);
  m.collective_seconds = {0.001, 0.002};
  m.stage_peak_bytes = {0, 7e10};
  return m;
}

TEST(MeasurementLayoutTest, UnpackInvertsPack) {
  absl::StatusOr<MeasurementLayout> layout = MeasurementLayout::Create(3, 2);
  ASSERT_TRUE(layout.ok()) << layout.status();
  const RankMeasurements sample = Sample();
  absl::StatusOr<std::vector<double>> packed = layout->Pack(sample);
  ASSERT_TRUE(packed.ok()) << packed.status();
  EXPECT_EQ(static_cast<int64_t>(packed->size()), layout->size());
  EXPECT_EQ(layout->size(), 3 + static_cast<int64_t>(ProbePhase::kCount) + kMostCollectives + 2);
  absl::StatusOr<RankMeasurements> unpacked = layout->Unpack(*packed);
  ASSERT_TRUE(unpacked.ok()) << unpacked.status();
  EXPECT_EQ(unpacked->step_seconds, sample.step_seconds);
  EXPECT_EQ(unpacked->phase_seconds, sample.phase_seconds);
  EXPECT_EQ(unpacked->collective_seconds, (std::vector<double>{0.001, 0.002, 0, 0}));
  EXPECT_EQ(unpacked->stage_peak_bytes, sample.stage_peak_bytes);
}

// The places are fixed: the steps first, then the phases, the collectives (unmeasured ones 0)
// and the stages, so that an element-wise maximum over ranks keeps each figure apart.
TEST(MeasurementLayoutTest, PacksAtFixedPlaces) {
  const MeasurementLayout layout = *MeasurementLayout::Create(3, 2);
  const std::vector<double> packed = *layout.Pack(Sample());
  const int64_t phases = static_cast<int64_t>(ProbePhase::kCount);
  EXPECT_EQ(packed[0], 1.5);
  EXPECT_EQ(packed[3], 0.125);
  EXPECT_EQ(packed[3 + phases], 0.001);
  EXPECT_EQ(packed[3 + phases + 2], 0.0);
  EXPECT_EQ(packed[3 + phases + kMostCollectives + 1], 7e10);
}

TEST(MeasurementLayoutTest, RejectsCountsThatDoNotFit) {
  EXPECT_EQ(MeasurementLayout::Create(-1, 1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MeasurementLayout::Create(1, 0).status().code(), absl::StatusCode::kInvalidArgument);
  const MeasurementLayout layout = *MeasurementLayout::Create(2, 2);
  absl::StatusOr<std::vector<double>> packed = layout.Pack(Sample());
  EXPECT_EQ(packed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(packed.status().message().find("step_seconds"), std::string::npos);
  RankMeasurements too_many = Sample();
  too_many.collective_seconds.assign(kMostCollectives + 1, 0.001);
  EXPECT_EQ(MeasurementLayout::Create(3, 2)->Pack(too_many).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(layout.Unpack({1.0}).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace paratune
