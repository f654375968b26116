#include "convert/result_source.h"

#include "gtest/gtest.h"

namespace paratune {
namespace {

TEST(ResultSourceTest, NamesWhereTheNumbersComeFrom) {
  v1::ProbeResult result;
  result.set_backend("cuda");
  EXPECT_STREQ(ResultSource(result), "measured");
  result.add_extrapolated("full_step");
  EXPECT_STREQ(ResultSource(result), "extrapolated");

  v1::ProbeResult replayed;
  replayed.set_backend("replay");
  EXPECT_STREQ(ResultSource(replayed), "replayed");
}

TEST(ResultSourceTest, ASimulatedShortProbeIsSimulated) {
  v1::ProbeResult result;
  result.set_backend("sim");
  result.set_simulated(true);
  result.add_extrapolated("full_step");
  EXPECT_STREQ(ResultSource(result), "simulated");
}

}  // namespace
}  // namespace paratune
