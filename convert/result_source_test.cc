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

TEST(ResultSourceTest, AFailedSimProbeIsSimulatedAndAGivenUpOneHasNoSource) {
  v1::ProbeResult result;
  result.set_outcome(v1::PROBE_TIMEOUT);
  result.set_backend("sim");
  EXPECT_STREQ(ResultSource(result), "simulated");

  // What the server records when a probe's attempts are spent (ActiveSearch::Retry).
  v1::ProbeResult given_up;
  given_up.set_outcome(v1::PROBE_INFRA_ERROR);
  given_up.set_backend("cuda");
  EXPECT_STREQ(ResultSource(given_up), "");
}

}  // namespace
}  // namespace paratune
