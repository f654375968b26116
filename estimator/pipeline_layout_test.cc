#include "estimator/pipeline_layout.h"

#include "gtest/gtest.h"

namespace paratune {
namespace {

TEST(PipelineLayoutTest, EvenSplit) {
  const PipelineLayout layout = LayoutPipeline(80, 4, 5);
  EXPECT_FALSE(layout.uneven);
  EXPECT_EQ(layout.first_stage_layers, 20);
  EXPECT_EQ(layout.middle_stage_layers, 20);
  EXPECT_EQ(layout.last_stage_layers, 20);
}

TEST(PipelineLayoutTest, Llama405bOnEightStagesHoldsOneLayerFewerAtTheEnds) {
  ASSERT_FALSE(EvenPipelineSplitFits(126, 8, 8));
  ASSERT_TRUE(UnevenPipelineSplitFits(126, 8, 8));
  const PipelineLayout layout = LayoutPipeline(126, 8, 8);
  EXPECT_TRUE(layout.uneven);
  EXPECT_EQ(layout.first_stage_layers, 15);
  EXPECT_EQ(layout.middle_stage_layers, 16);
  EXPECT_EQ(layout.last_stage_layers, 15);
  EXPECT_EQ(layout.first_stage_layers + 6 * layout.middle_stage_layers + layout.last_stage_layers,
            126);
}

TEST(PipelineLayoutTest, UnevenNeedsPipelineAndDivisibility) {
  EXPECT_FALSE(UnevenPipelineSplitFits(126, 1, 1));
  EXPECT_FALSE(UnevenPipelineSplitFits(126, 3, 1));  // 128 % 3
  EXPECT_TRUE(UnevenPipelineSplitFits(30, 4, 8));    // chunks of one slot
}

}  // namespace
}  // namespace paratune
