#include "worker/probe/fp8_scaling.h"

#include <cfloat>
#include <cmath>
#include <limits>
#include <vector>

#include "gtest/gtest.h"

namespace paratune {
namespace {

TEST(Fp8ScalingTest, FormatsAndRecipeDefaults) {
  EXPECT_EQ(Fp8Max(Fp8Format::kE4M3), 448.0f);
  EXPECT_EQ(Fp8Max(Fp8Format::kE5M2), 57344.0f);
  EXPECT_EQ(HybridFormat(/*gradient=*/false), Fp8Format::kE4M3);
  EXPECT_EQ(HybridFormat(/*gradient=*/true), Fp8Format::kE5M2);
  const DelayedScalingRecipe recipe;
  EXPECT_EQ(recipe.amax_history_length, 1024);
  EXPECT_EQ(recipe.margin, 0);
  EXPECT_EQ(ScaledFp8Max(Fp8Format::kE4M3, 0), 448.0f);
  EXPECT_EQ(ScaledFp8Max(Fp8Format::kE4M3, 2), 112.0f);
  EXPECT_EQ(ScaledFp8Max(Fp8Format::kE5M2, 1), 28672.0f);
}

TEST(Fp8ScalingTest, ScaleMapsAmaxOntoTheScaledMaximum) {
  EXPECT_FLOAT_EQ(DelayedScale(2.0f, 1.0f, 448.0f), 224.0f);
  EXPECT_FLOAT_EQ(DelayedScale(1000.0f, 1.0f, 448.0f), 0.448f);
  EXPECT_FLOAT_EQ(DelayedScale(0.5f, 1.0f, 57344.0f), 114688.0f);
}

TEST(Fp8ScalingTest, UnmeasuredAmaxKeepsThePreviousScale) {
  EXPECT_EQ(DelayedScale(0.0f, 3.0f, 448.0f), 3.0f);
  EXPECT_EQ(DelayedScale(std::numeric_limits<float>::infinity(), 3.0f, 448.0f), 3.0f);
  EXPECT_EQ(DelayedScale(std::numeric_limits<float>::quiet_NaN(), 3.0f, 448.0f), 3.0f);
}

TEST(Fp8ScalingTest, TinyAmaxSaturatesTheScaleAtFloatMax) {
  EXPECT_EQ(DelayedScale(1e-38f, 1.0f, 57344.0f), FLT_MAX);
  EXPECT_TRUE(std::isfinite(1.0f / DelayedScale(1e-38f, 1.0f, 57344.0f)));
}

TEST(Fp8ScalingTest, RollReturnsTheWindowMaximumAndRotates) {
  std::vector<float> history = {5.0f, 1.0f, 7.0f, 2.0f};
  EXPECT_EQ(RollAmaxHistory(history.data(), 4, 1), 7.0f);
  // Rotated by -1 ({1, 7, 2, 5}), then the first entry cleared for the next casts.
  EXPECT_EQ(history, (std::vector<float>{0.0f, 7.0f, 2.0f, 5.0f}));
  history[0] = 3.0f;
  EXPECT_EQ(RollAmaxHistory(history.data(), 4, 1), 7.0f);
  EXPECT_EQ(history, (std::vector<float>{0.0f, 2.0f, 5.0f, 3.0f}));
  // The 7 has left the window.
  EXPECT_EQ(RollAmaxHistory(history.data(), 4, 1), 5.0f);
}

TEST(Fp8ScalingTest, RollOfOneEntryUsesTheLatestAmax) {
  float history = 9.0f;
  EXPECT_EQ(RollAmaxHistory(&history, 1, 1), 9.0f);
  EXPECT_EQ(history, 0.0f);
}

TEST(Fp8ScalingTest, RollFollowsTheStrideOfInterleavedTensors) {
  // Two tensors' windows interleaved, [length][tensors] as Transformer Engine stores them.
  std::vector<float> history = {1.0f, 10.0f, 4.0f, 40.0f, 2.0f, 20.0f};
  EXPECT_EQ(RollAmaxHistory(history.data() + 1, 3, 2), 40.0f);
  EXPECT_EQ(history, (std::vector<float>{1.0f, 0.0f, 4.0f, 20.0f, 2.0f, 10.0f}));
}

TEST(Fp8ScalingTest, UpdateSetsScaleAndItsInverseFromPreviousIterations) {
  const DelayedScalingRecipe recipe{/*amax_history_length=*/3, /*margin=*/1};
  const float scaled_max = ScaledFp8Max(Fp8Format::kE4M3, recipe.margin);
  std::vector<float> history(recipe.amax_history_length, 0.0f);
  float scale = 1.0f, scale_inverse = 1.0f;
  // No cast has run yet: the scale stays 1.
  UpdateDelayedScaling(history.data(), recipe.amax_history_length, 1, scaled_max, &scale,
                       &scale_inverse);
  EXPECT_EQ(scale, 1.0f);
  EXPECT_EQ(scale_inverse, 1.0f);
  history[0] = 8.0f;
  UpdateDelayedScaling(history.data(), recipe.amax_history_length, 1, scaled_max, &scale,
                       &scale_inverse);
  EXPECT_FLOAT_EQ(scale, 224.0f / 8.0f);
  EXPECT_FLOAT_EQ(scale_inverse, 8.0f / 224.0f);
  // A smaller amax later does not lower the window's maximum until 8 leaves it.
  history[0] = 2.0f;
  UpdateDelayedScaling(history.data(), recipe.amax_history_length, 1, scaled_max, &scale,
                       &scale_inverse);
  EXPECT_FLOAT_EQ(scale, 224.0f / 8.0f);
}

}  // namespace
}  // namespace paratune
