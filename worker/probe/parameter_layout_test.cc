#include "worker/probe/parameter_layout.h"

#include <numeric>
#include <vector>

#include "estimator/cluster_spec.h"
#include "estimator/memory_model.h"
#include "estimator/parallel_config.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

ParallelConfig Config(const ModelSpec& model, const TrainingSpec& training, int64_t tp,
                      int64_t pp) {
  ParallelDims dims;
  dims.tp = tp;
  dims.pp = pp;
  const ClusterSpec cluster = *ClusterSpec::Create(*FindGpuPreset("h100-80gb"), 1, tp * pp);
  return *ParallelConfig::Create(model, training, cluster, PlacementRules(), dims);
}

TrainingSpec Training() {
  TrainingOptions options;
  options.global_batch_size = 8;
  options.seq_len = 4096;
  return *TrainingSpec::Create(options);
}

TEST(ParameterLayoutTest, StagesHoldWhatTheMemoryModelCounts) {
  // The memory model's weights term is 2 bytes per parameter of the stage; the layout holds
  // the same tensors (the norms whole on every tensor-parallel rank where the model divides
  // them by t, and alignment padding: both far below 0.1%).
  const ModelSpec model = *FindModelPreset("llama3.1-8b");
  const TrainingSpec training = Training();
  const ParallelConfig config = Config(model, training, 2, 4);
  const ShardShapes shapes = ComputeShardShapes(model, training, config);
  const ClusterSpec cluster = *ClusterSpec::Create(*FindGpuPreset("h100-80gb"), 1, 8);
  const MemoryEstimate estimate =
      EstimateMemory(model, training, cluster, config, MemoryOptions::FormulasOnly());
  const struct {
    int64_t stage;
    const StageMemory& memory;
  } stages[] = {{0, estimate.first_stage}, {1, estimate.middle_stage}, {3, estimate.last_stage}};
  for (const auto& stage : stages) {
    const ParameterLayout layout = LayoutParameters(
        shapes, StageLayersOf(model, config, stage.stage), model.tied_embeddings(), 1);
    const double modelled = stage.memory.term(MemoryTerm::kWeights) / 2;
    EXPECT_NEAR(static_cast<double>(layout.elements), modelled, 1e-3 * modelled)
        << "stage " << stage.stage;
  }
}

TEST(ParameterLayoutTest, TensorsAreAlignedAndDisjoint) {
  const ModelSpec model = *FindModelPreset("llama3.2-1b");
  const TrainingSpec training = Training();
  const ParallelConfig config = Config(model, training, 2, 1);
  const ShardShapes shapes = ComputeShardShapes(model, training, config);
  const ParameterLayout layout =
      LayoutParameters(shapes, StageLayersOf(model, config, 0), model.tied_embeddings(), 1);
  ASSERT_EQ(layout.layers.size(), 16u);
  EXPECT_EQ(layout.first_layer, std::vector<int64_t>{0});
  EXPECT_EQ(layout.embedding, 0);
  // Llama-3.2-1B ties its embeddings: on a single stage the LM head is the embedding.
  EXPECT_EQ(layout.lm_head, layout.embedding);
  int64_t previous_end = shapes.vocab * shapes.hidden;
  for (const LayerParameterOffsets& layer : layout.layers) {
    const int64_t starts[] = {layer.attention_norm, layer.qkv,     layer.attention_output,
                              layer.mlp_norm,       layer.gate_up, layer.down};
    const int64_t sizes[] = {
        shapes.hidden, shapes.qkv.WeightElements(),     shapes.attention_output.WeightElements(),
        shapes.hidden, shapes.gate_up.WeightElements(), shapes.down.WeightElements()};
    for (int i = 0; i < 6; ++i) {
      EXPECT_EQ(starts[i] % kParameterAlignment, 0);
      EXPECT_GE(starts[i], previous_end);
      previous_end = starts[i] + sizes[i];
    }
  }
  EXPECT_LE(layout.final_norm + shapes.hidden, layout.elements);
}

TEST(ParameterLayoutTest, ShardsAreEqualAlignedAndCoverEveryParameter) {
  const ModelSpec model = *FindModelPreset("llama3.2-1b");
  const TrainingSpec training = Training();
  const ParallelConfig config = Config(model, training, 1, 2);
  const ShardShapes shapes = ComputeShardShapes(model, training, config);
  for (int64_t shards : {1, 3, 8, 64}) {
    const ParameterLayout layout =
        LayoutParameters(shapes, StageLayersOf(model, config, 1), model.tied_embeddings(), shards);
    EXPECT_EQ(layout.padded_elements, layout.shard_elements * shards);
    EXPECT_EQ(layout.shard_elements % kParameterAlignment, 0);
    EXPECT_GE(layout.padded_elements, layout.elements);
    EXPECT_LT(layout.padded_elements - layout.elements, shards * kParameterAlignment * 2);
    // Every tensor starts on a multiple of the shard count too (3 x 128 for 3 shards), so that
    // runs of whole tensors shard evenly as data-parallel buckets.
    EXPECT_EQ(layout.tensor_alignment, std::lcm(kParameterAlignment, shards));
    for (const LayerParameterOffsets& layer : layout.layers) {
      for (int64_t start : {layer.attention_norm, layer.qkv, layer.attention_output, layer.mlp_norm,
                            layer.gate_up, layer.down}) {
        EXPECT_EQ(start % layout.tensor_alignment, 0) << shards;
      }
    }
    EXPECT_EQ(layout.lm_head % layout.tensor_alignment, 0);
    // Tied embeddings get their own copy on the last stage of a pipeline.
    EXPECT_EQ(layout.embedding, -1);
    EXPECT_GE(layout.lm_head, 0);
  }
}

}  // namespace
}  // namespace paratune
