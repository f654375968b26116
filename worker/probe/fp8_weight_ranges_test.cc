#include "worker/probe/fp8_weight_ranges.h"

#include <algorithm>
#include <vector>

#include "estimator/cluster_spec.h"
#include "estimator/parallel_config.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

// Llama-3.2-1B on stage 1 of pp 2 with two model chunks (vp 2): 4 layers per chunk.
struct Stage {
  ShardShapes shapes;
  StageLayers stage_layers;
};

Stage InterleavedStage() {
  const ModelSpec model = *FindModelPreset("llama3.2-1b");
  TrainingOptions options;
  options.global_batch_size = 8;
  options.seq_len = 4096;
  options.fp8 = true;
  options.fp8_param_gather = true;
  const TrainingSpec training = *TrainingSpec::Create(options);
  ParallelDims dims;
  dims.tp = 2;
  dims.pp = 2;
  dims.virtual_pipeline = 2;
  const ClusterSpec cluster = *ClusterSpec::Create(*FindGpuPreset("h100-80gb"), 1, 4);
  const ParallelConfig config =
      *ParallelConfig::Create(model, training, cluster, PlacementRules(), dims);
  return {ComputeShardShapes(model, training, config), StageLayersOf(model, config, 1)};
}

int64_t WeightOffset(const LayerParameterOffsets& layer, Fp8Linear linear) {
  const int64_t offsets[kFp8LinearsPerLayer] = {layer.qkv, layer.attention_output, layer.gate_up,
                                                layer.down};
  return offsets[static_cast<int>(linear)];
}

TEST(Fp8WeightRangesTest, BF16WeightsHaveNone) {
  const Stage stage = InterleavedStage();
  const ParameterLayout layout = LayoutParameters(stage.shapes, stage.stage_layers, false, 4,
                                                  /*fp8_parameters=*/false);
  EXPECT_TRUE(Fp8WeightRangesIn(layout, stage.shapes, 0, layout.padded_elements).empty());
}

TEST(Fp8WeightRangesTest, TheWholeBufferListsEveryLinearWeightWholeInBufferOrder) {
  const Stage stage = InterleavedStage();
  const ParameterLayout layout = LayoutParameters(stage.shapes, stage.stage_layers, false, 4,
                                                  /*fp8_parameters=*/true);
  const std::vector<Fp8WeightRange> ranges =
      Fp8WeightRangesIn(layout, stage.shapes, 0, layout.padded_elements);
  ASSERT_EQ(ranges.size(), 2u * 4 * kFp8LinearsPerLayer);
  int64_t previous_end = 0;
  for (size_t i = 0; i < ranges.size(); ++i) {
    const Fp8WeightRange& range = ranges[i];
    const int64_t layer = i / kFp8LinearsPerLayer;
    EXPECT_EQ(range.chunk, layer / 4);
    EXPECT_EQ(range.layer_in_chunk, layer % 4);
    EXPECT_EQ(range.linear, static_cast<Fp8Linear>(i % kFp8LinearsPerLayer));
    EXPECT_EQ(range.start, WeightOffset(layout.layers[layer], range.linear));
    EXPECT_EQ(range.count, LinearShapeOf(stage.shapes, range.linear).WeightElements());
    EXPECT_TRUE(layout.RegionOf(range.start).fp8);
    EXPECT_EQ(layout.RegionOf(range.start + range.count - 1).chunk, range.chunk);
    EXPECT_GE(range.start, previous_end);
    previous_end = range.start + range.count;
  }
}

TEST(Fp8WeightRangesTest, ShardsOfEachRegionSplitTheWeightsExactlyOnce) {
  const Stage stage = InterleavedStage();
  const int64_t shards = 3;
  const ParameterLayout layout = LayoutParameters(stage.shapes, stage.stage_layers, false, shards,
                                                  /*fp8_parameters=*/true);
  // Every fp8 element of the buffer is covered once by the shards' ranges, each range within
  // its shard and its weight.
  std::vector<int> covered(layout.padded_elements, 0);
  int64_t cut_weights = 0;
  for (const ParameterRegion& region : layout.regions) {
    const int64_t shard = (region.end - region.start) / shards;
    ASSERT_EQ(shard * shards, region.end - region.start);
    for (int64_t r = 0; r < shards; ++r) {
      const int64_t first = region.start + r * shard;
      for (const Fp8WeightRange& range :
           Fp8WeightRangesIn(layout, stage.shapes, first, first + shard)) {
        EXPECT_TRUE(region.fp8);
        EXPECT_GE(range.start, first);
        EXPECT_LE(range.start + range.count, first + shard);
        const int64_t weight = WeightOffset(
            layout.layers[layout.first_layer[range.chunk] + range.layer_in_chunk], range.linear);
        EXPECT_GE(range.start, weight);
        EXPECT_LE(range.start + range.count,
                  weight + LinearShapeOf(stage.shapes, range.linear).WeightElements());
        if (range.start != weight) ++cut_weights;
        for (int64_t e = range.start; e < range.start + range.count; ++e) ++covered[e];
      }
    }
  }
  // Counted, then checked once: an assertion per element of the stage's weights is what made
  // this test take most of a minute.
  int64_t not_once = 0;
  for (const Fp8WeightRange& range :
       Fp8WeightRangesIn(layout, stage.shapes, 0, layout.padded_elements)) {
    for (int64_t e = range.start; e < range.start + range.count; ++e) {
      not_once += covered[e] != 1;
      covered[e] = 0;
    }
  }
  EXPECT_EQ(not_once, 0) << "fp8 elements covered other than once by the shards' ranges";
  EXPECT_EQ(std::count(covered.begin(), covered.end(), 0), layout.padded_elements)
      << "elements outside every fp8 weight covered by a shard's range";
  // Three shards of a chunk's weights cut some weight in two.
  EXPECT_GT(cut_weights, 0);
}

}  // namespace
}  // namespace paratune
