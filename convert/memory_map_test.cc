#include "convert/memory_map.h"

#include <set>
#include <tuple>
#include <vector>

#include "estimator/cluster_spec.h"
#include "estimator/model_spec.h"
#include "estimator/performance_parameters.h"
#include "estimator/training_spec.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

class MemoryMapTest : public ::testing::Test {
 protected:
  // Llama-3.1-8B, s 8192, global batch 64, 2 nodes of 8 H100-80GB.
  MemoryMapTest()
      : model_(*FindModelPreset("llama3.1-8b")),
        training_(*TrainingSpec::Create({64, 8192})),
        cluster_(*ClusterSpec::Create(*FindGpuPreset("h100-80gb"), 2, 8)) {}

  Plan MakePlan(const PlanOptions& options) const {
    return *PlanConfigurations(model_, training_, cluster_, options,
                               DefaultPerformanceParameters(cluster_.gpu()));
  }

  ModelSpec model_;
  TrainingSpec training_;
  ClusterSpec cluster_;
};

using Shape = std::tuple<int64_t, int64_t, int64_t>;  // tp cp pp

Shape ShapeOf(const v1::ParallelConfig& config) {
  return {config.tensor_parallel(), config.context_parallel(), config.pipeline_parallel()};
}

TEST_F(MemoryMapTest, OneRowPerShapeOneCellPerValidMicroBatch) {
  const PlanOptions options;
  const Plan plan = MakePlan(options);
  const v1::MemoryMap map =
      MemoryMapToProto(plan, options, cluster_.gpu().memory_bytes, /*limit=*/0);
  EXPECT_EQ(map.capacity_bytes(), cluster_.gpu().memory_bytes);
  EXPECT_DOUBLE_EQ(map.safe_fraction(), 0.80);
  EXPECT_EQ(std::vector<int64_t>(map.micro_batch_sizes().begin(), map.micro_batch_sizes().end()),
            (std::vector<int64_t>{1, 2, 4, 8, 16}));
  EXPECT_EQ(map.total_rows(), map.rows_size());
  int64_t cells = 0;
  std::set<Shape> shapes;
  for (const v1::MemoryMapRow& row : map.rows()) {
    EXPECT_EQ(row.shape().micro_batch_size(), 0);
    EXPECT_TRUE(shapes.insert(ShapeOf(row.shape())).second);
    for (int i = 1; i < row.cells_size(); ++i) {
      EXPECT_LT(row.cells(i - 1).micro_batch_size(), row.cells(i).micro_batch_size());
    }
    cells += row.cells_size();
  }
  EXPECT_EQ(cells, static_cast<int64_t>(plan.memory_map.size()));
  // tp 1 on 16 GPUs: dp 16 x micro-batch 8 does not divide the global batch of 64.
  const v1::MemoryMapRow& first = map.rows(0);
  EXPECT_EQ(ShapeOf(first.shape()), Shape(1, 1, 1));
  EXPECT_EQ(first.shape().data_parallel(), 16);
  ASSERT_EQ(first.cells_size(), 3);
  EXPECT_EQ(first.cells(2).micro_batch_size(), 4);
  EXPECT_EQ(first.cells(2).verdict(), v1::OUT_OF_MEMORY);
  EXPECT_GT(first.cells(2).fraction_of_capacity(), 1);
}

TEST_F(MemoryMapTest, ALimitKeepsTheRowsOfTheBestPredictedCandidatesInMapOrder) {
  const PlanOptions options;
  const Plan plan = MakePlan(options);
  const v1::MemoryMap all = MemoryMapToProto(plan, options, cluster_.gpu().memory_bytes, 0);
  const v1::MemoryMap map = MemoryMapToProto(plan, options, cluster_.gpu().memory_bytes, 3);
  ASSERT_EQ(map.rows_size(), 3);
  EXPECT_EQ(map.total_rows(), all.total_rows());
  const ParallelDims& best = plan.candidates[0].config.dims();
  bool has_best = false;
  for (const v1::MemoryMapRow& row : map.rows()) {
    has_best |= ShapeOf(row.shape()) == Shape(best.tp, best.cp, best.pp);
  }
  EXPECT_TRUE(has_best);
  // Still in the map's order.
  for (int i = 1; i < map.rows_size(); ++i) {
    EXPECT_LT(ShapeOf(map.rows(i - 1).shape()), ShapeOf(map.rows(i).shape()));
  }
}

TEST_F(MemoryMapTest, VirtualPipelineAndRecomputeMakeRowsOfTheirOwn) {
  PlanOptions options;
  options.virtual_pipeline_sizes = {1, 2};
  options.recompute_modes = {Recompute::kNone, Recompute::kFull};
  const v1::MemoryMap map =
      MemoryMapToProto(MakePlan(options), options, cluster_.gpu().memory_bytes, 0);
  bool interleaved_full = false;
  for (const v1::MemoryMapRow& row : map.rows()) {
    interleaved_full |=
        row.shape().virtual_pipeline() == 2 && row.shape().recompute() == v1::RECOMPUTE_FULL;
  }
  EXPECT_TRUE(interleaved_full);
}

TEST(MemoryMapExpertTest, ExpertLayoutsAreRowsOfTheirOwn) {
  // A mixture-of-experts plan's map, written by hand: the planner does not plan one yet.
  Plan plan;
  ParallelDims dims = MakeParallelDims(8, 2, 1, 1, 1);
  for (const int64_t ep : {2, 8}) {
    dims.ep = ep;
    for (const int64_t micro_batch : {1, 2}) {
      dims.micro_batch = micro_batch;
      plan.memory_map.push_back({dims, 0.5f, MemoryVerdict::kSafe});
    }
  }
  dims.etp = 1;
  plan.memory_map.push_back({dims, 0.5f, MemoryVerdict::kSafe});
  const v1::MemoryMap map = MemoryMapToProto(plan, PlanOptions(), int64_t{80} << 30, /*limit=*/0);
  ASSERT_EQ(map.rows_size(), 3);
  EXPECT_EQ(map.rows(0).shape().expert_parallel(), 2);
  EXPECT_EQ(map.rows(0).cells_size(), 2);
  EXPECT_EQ(map.rows(1).shape().expert_parallel(), 8);
  EXPECT_EQ(map.rows(1).shape().expert_tensor_parallel(), 0);
  EXPECT_EQ(map.rows(2).shape().expert_tensor_parallel(), 1);
  EXPECT_EQ(map.rows(2).cells_size(), 1);
}

}  // namespace
}  // namespace paratune
