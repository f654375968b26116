#include "worker/probe/weight_gather_plan.h"

#include <vector>

#include "gtest/gtest.h"
#include "worker/probe/overlap_plan.h"
#include "worker/probe/pipeline_schedule.h"
#include "worker/probe/shard_shapes.h"

namespace paratune {
namespace {

// One stage of two layers with the embedding and the loss: units 0 (embedding), 1 and 2
// (layers), 3 (loss); each micro-batch's forward uses them in order, its backward in reverse,
// every use from the slot the one before it did not read.
TEST(WeightGatherPlanTest, OneStageUsesEveryUnitForwardThenBackwardInAlternateSlots) {
  StageLayers layers;
  layers.chunk_layers = {2};
  layers.embedding = true;
  layers.lm_head = true;
  const WeightGatherPlan plan =
      WeightGatherPlanOf(PipelineScheduleOf(1, 1, 2, 0), ChunkUnitsOf(layers));
  constexpr PassDirection kF = PassDirection::kForward;
  constexpr PassDirection kB = PassDirection::kBackward;
  const std::vector<WeightUse> expected = {
      {0, 0, kF, 0}, {0, 1, kF, 1}, {0, 2, kF, 0}, {0, 3, kF, 1}, {1, 3, kB, 0}, {1, 2, kB, 1},
      {1, 1, kB, 0}, {1, 0, kB, 1}, {2, 0, kF, 0}, {2, 1, kF, 1}, {2, 2, kF, 0}, {2, 3, kF, 1},
      {3, 3, kB, 0}, {3, 2, kB, 1}, {3, 1, kB, 0}, {3, 0, kB, 1},
  };
  EXPECT_EQ(plan.uses, expected);
}

// An interleaved middle stage: every pass uses its chunk's layers, twice per micro-batch and
// chunk in all, and a chunk of no layers (an uneven split's) uses nothing.
TEST(WeightGatherPlanTest, EveryPassUsesItsChunksUnits) {
  StageLayers layers;
  layers.chunk_layers = {3, 0};
  const std::vector<ChunkUnits> chunks = ChunkUnitsOf(layers);
  const int64_t micro_batches = 4;
  const std::vector<ScheduleStep> schedule = PipelineScheduleOf(2, 2, micro_batches, 1);
  const WeightGatherPlan plan = WeightGatherPlanOf(schedule, chunks);
  EXPECT_EQ(static_cast<int64_t>(plan.uses.size()), 2 * micro_batches * 3);
  int64_t pass = 0;
  size_t use = 0;
  for (const ScheduleStep& step : schedule) {
    if (!step.pass.has_value()) continue;
    const int64_t units = step.pass->chunk == 0 ? 3 : 0;
    for (int64_t i = 0; i < units; ++i, ++use) {
      ASSERT_LT(use, plan.uses.size());
      EXPECT_EQ(plan.uses[use].pass, pass);
      EXPECT_EQ(plan.uses[use].direction, step.pass->direction);
      EXPECT_EQ(plan.uses[use].slot, static_cast<int64_t>(use) % kGatheredWeightSlots);
    }
    ++pass;
  }
  EXPECT_EQ(use, plan.uses.size());
}

}  // namespace
}  // namespace paratune
