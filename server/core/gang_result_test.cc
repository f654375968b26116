#include "server/core/gang_result.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

using ::testing::ElementsAre;

v1::ProbeResult Ok(double step_time, int64_t peak, double wall) {
  v1::ProbeResult result;
  result.set_outcome(v1::PROBE_OK);
  result.add_step_times_seconds(step_time);
  result.set_mean_step_time_seconds(step_time);
  result.set_peak_memory_bytes(peak);
  result.set_wall_seconds(wall);
  return result;
}

TEST(CombineGangResultsTest, SingleMemberIsUnchanged) {
  const v1::ProbeResult only = Ok(1.5, 100, 3);
  const v1::ProbeResult combined = CombineGangResults({only});
  EXPECT_EQ(combined.SerializeAsString(), only.SerializeAsString());
}

TEST(CombineGangResultsTest, RankZeroTimingLargestPeakAndWall) {
  v1::ProbeResult first = Ok(1.5, 100, 3);
  first.add_measured("gemm");
  first.add_modelled("dp_collectives");
  v1::ProbeResult second = Ok(1.7, 300, 2);
  second.add_measured("dp_collectives");
  second.add_measured("pp_send_recv");
  const v1::ProbeResult combined = CombineGangResults({first, second});
  EXPECT_DOUBLE_EQ(combined.mean_step_time_seconds(), 1.5);
  EXPECT_THAT(combined.step_times_seconds(), ElementsAre(1.5));
  EXPECT_EQ(combined.peak_memory_bytes(), 300);
  EXPECT_DOUBLE_EQ(combined.wall_seconds(), 3);
  EXPECT_THAT(combined.measured(), ElementsAre("dp_collectives", "gemm", "pp_send_recv"));
  EXPECT_TRUE(combined.modelled().empty());
}

TEST(CombineGangResultsTest, TimingComesFromTheMemberThatTimedItsSteps) {
  // Megatron-LM logs iteration times on its last rank only, on the gang's last node.
  v1::ProbeResult untimed = Ok(1, 500, 3);
  untimed.clear_step_times_seconds();
  untimed.set_mean_step_time_seconds(0);
  const v1::ProbeResult last = Ok(2.5, 400, 3);
  const v1::ProbeResult combined = CombineGangResults({untimed, untimed, last});
  EXPECT_EQ(combined.outcome(), v1::PROBE_OK);
  EXPECT_DOUBLE_EQ(combined.mean_step_time_seconds(), 2.5);
  EXPECT_EQ(combined.peak_memory_bytes(), 500);
}

TEST(CombineGangResultsTest, NoMemberTimedItsStepsIsACrash) {
  v1::ProbeResult untimed = Ok(1, 500, 3);
  untimed.clear_step_times_seconds();
  untimed.set_message("template megatron-llama: node 0");
  const v1::ProbeResult combined = CombineGangResults({untimed, untimed});
  EXPECT_EQ(combined.outcome(), v1::PROBE_CRASH);
  EXPECT_THAT(combined.message(), ::testing::HasSubstr("none reported step times"));
}

}  // namespace
}  // namespace paratune
