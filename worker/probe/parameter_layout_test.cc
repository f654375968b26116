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
        shapes, StageLayersOf(model, config, stage.stage), model.tied_embeddings(), 1, false);
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
      LayoutParameters(shapes, StageLayersOf(model, config, 0), model.tied_embeddings(), 1, false);
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
    const ParameterLayout layout = LayoutParameters(shapes, StageLayersOf(model, config, 1),
                                                    model.tied_embeddings(), shards, false);
    EXPECT_EQ(layout.padded_elements, layout.shard_elements * shards);
    EXPECT_EQ(layout.shard_elements % kParameterAlignment, 0);
    EXPECT_GE(layout.padded_elements, layout.elements);
    EXPECT_LT(layout.padded_elements - layout.elements, shards * kParameterAlignment * 2);
    // Every tensor starts on a multiple of the shard count too (3 x 128 for 3 shards), so that
    // runs of whole tensors shard evenly as data-parallel buckets.
    EXPECT_EQ(layout.dense.tensor_alignment, std::lcm(kParameterAlignment, shards));
    for (const LayerParameterOffsets& layer : layout.layers) {
      for (int64_t start : {layer.attention_norm, layer.qkv, layer.attention_output, layer.mlp_norm,
                            layer.gate_up, layer.down}) {
        EXPECT_EQ(start % layout.dense.tensor_alignment, 0) << shards;
      }
    }
    EXPECT_EQ(layout.lm_head % layout.dense.tensor_alignment, 0);
    // Tied embeddings get their own copy on the last stage of a pipeline.
    EXPECT_EQ(layout.embedding, -1);
    EXPECT_GE(layout.lm_head, 0);
  }
}

TEST(ParameterLayoutTest, Fp8ParametersKeepTheLinearsInOneByteRegions) {
  // With fp8_param_gather the memory model stores the linear weights in 1 byte; the layout's
  // weights buffer matches it, and each chunk's linears form an fp8 region of their own.
  const ModelSpec model = *FindModelPreset("llama3.1-8b");
  TrainingOptions options;
  options.global_batch_size = 8;
  options.seq_len = 4096;
  options.fp8 = true;
  options.fp8_param_gather = true;
  options.distributed_optimizer = true;
  const TrainingSpec training = *TrainingSpec::Create(options);
  ParallelDims dims;
  dims.tp = 2;
  dims.pp = 2;
  dims.virtual_pipeline = 2;
  const ClusterSpec cluster = *ClusterSpec::Create(*FindGpuPreset("h100-80gb"), 1, 4);
  const ParallelConfig config =
      *ParallelConfig::Create(model, training, cluster, PlacementRules(), dims);
  const ShardShapes shapes = ComputeShardShapes(model, training, config);
  const MemoryEstimate estimate =
      EstimateMemory(model, training, cluster, config, MemoryOptions::FormulasOnly());
  const StageLayers layers = StageLayersOf(model, config, 0);
  const ParameterLayout layout =
      LayoutParameters(shapes, layers, model.tied_embeddings(), 3, /*fp8_parameters=*/true);
  const double modelled = estimate.first_stage.term(MemoryTerm::kWeights);
  EXPECT_NEAR(static_cast<double>(layout.weight_bytes), modelled, 1e-3 * modelled);

  // Regions tile the buffer, chunk by chunk, bf16 then fp8, aligned in elements and bytes.
  ASSERT_EQ(layout.regions.size(), 2 * layers.chunk_layers.size());
  int64_t next = 0;
  for (size_t r = 0; r < layout.regions.size(); ++r) {
    const ParameterRegion& region = layout.regions[r];
    EXPECT_EQ(region.chunk, static_cast<int64_t>(r / 2));
    EXPECT_EQ(region.fp8, r % 2 == 1);
    EXPECT_EQ(region.bytes_per_element, region.fp8 ? 1 : 2);
    EXPECT_EQ(region.start, next);
    EXPECT_EQ(region.start % layout.dense.tensor_alignment, 0);
    EXPECT_EQ(region.byte_start % kWeightRegionAlignment, 0);
    next = region.end;
  }
  EXPECT_EQ(next, layout.padded_elements);
  const ParameterRegion& last = layout.regions.back();
  EXPECT_EQ(layout.weight_bytes, last.byte_start + last.end - last.start);

  // Linears in fp8 regions, norms and the embedding in bf16 ones, at their bytes.
  EXPECT_FALSE(layout.RegionOf(layout.embedding).fp8);
  EXPECT_EQ(layout.WeightByte(layout.embedding), 2 * layout.embedding);
  for (size_t c = 0; c < layout.first_layer.size(); ++c) {
    const LayerParameterOffsets& layer = layout.layers[layout.first_layer[c]];
    for (int64_t linear : {layer.qkv, layer.attention_output, layer.gate_up, layer.down}) {
      const ParameterRegion& region = layout.RegionOf(linear);
      EXPECT_TRUE(region.fp8);
      EXPECT_EQ(region.chunk, static_cast<int64_t>(c));
      EXPECT_EQ(layout.WeightByte(linear), region.byte_start + linear - region.start);
    }
    for (int64_t norm : {layer.attention_norm, layer.mlp_norm}) {
      const ParameterRegion& region = layout.RegionOf(norm);
      EXPECT_FALSE(region.fp8);
      EXPECT_EQ(layout.WeightByte(norm), region.byte_start + 2 * (norm - region.start));
    }
  }
}

TEST(ParameterLayoutTest, Bf16ParametersHaveOneRegionPerChunk) {
  const ModelSpec model = *FindModelPreset("llama3.2-1b");
  const TrainingSpec training = Training();
  const ParallelConfig config = Config(model, training, 1, 2);
  const ShardShapes shapes = ComputeShardShapes(model, training, config);
  const ParameterLayout layout =
      LayoutParameters(shapes, StageLayersOf(model, config, 1), model.tied_embeddings(), 8, false);
  ASSERT_EQ(layout.regions.size(), 1u);
  EXPECT_FALSE(layout.regions[0].fp8);
  EXPECT_EQ(layout.regions[0].end, layout.padded_elements);
  EXPECT_EQ(layout.weight_bytes, 2 * layout.padded_elements);
  EXPECT_EQ(layout.WeightByte(layout.lm_head), 2 * layout.lm_head);
}

// Llama 4 Maverick (interleaved MoE layers with a shared expert; E 128, f_e 8192) at tp 2,
// dp 4, pp 4, ep 4, etp 1 with the distributed optimizer: the dense partition is sharded over
// dp = 4, the experts over edp = tp dp / (etp ep) = 2.
struct MoeStage {
  ModelSpec model;
  TrainingSpec training;
  ClusterSpec cluster;
  ParallelConfig config;
  ShardShapes shapes;
  MoeShardShapes moe;
};

MoeStage MaverickStage() {
  const ModelSpec model = *FindModelPreset("llama4-maverick");
  TrainingOptions options;
  options.global_batch_size = 32;
  options.seq_len = 4096;
  options.distributed_optimizer = true;
  const TrainingSpec training = *TrainingSpec::Create(options);
  const ClusterSpec cluster = *ClusterSpec::Create(*FindGpuPreset("h100-80gb"), 4, 8);
  ParallelDims dims = MakeParallelDims(/*dp=*/4, /*tp=*/2, /*pp=*/4, /*cp=*/1, /*micro_batch=*/1);
  dims.ep = 4;
  dims.etp = 1;
  EXPECT_EQ(CheckRules(model, training, cluster, PlacementRules(), dims), Rejection::kValid);
  const ParallelConfig config = ParallelConfig::FromCheckedDims(dims);
  const ShardShapes shapes = ComputeShardShapes(model, training, config);
  return {model,  training, cluster,
          config, shapes,   *ComputeMoeShardShapes(model, training, config, shapes)};
}

TEST(ParameterLayoutTest, MoeStagesHoldWhatTheMemoryModelCounts) {
  // Weights: 2 bytes per parameter of the stage, experts, router and shared experts included;
  // optimizer states: 12 bytes per element of the rank's shards, the dense partition's over
  // dp x cp and the experts' over edp (moe_memory.h, ExpertModelStates).
  const MoeStage x = MaverickStage();
  const MemoryEstimate estimate =
      EstimateMemory(x.model, x.training, x.cluster, x.config, MemoryOptions::FormulasOnly());
  const struct {
    int64_t stage;
    const StageMemory& memory;
  } stages[] = {{0, estimate.first_stage}, {1, estimate.middle_stage}, {3, estimate.last_stage}};
  for (const auto& stage : stages) {
    SCOPED_TRACE(stage.stage);
    const ParameterLayout layout =
        LayoutParameters(x.shapes, x.moe, StageLayersOf(x.model, x.config, stage.stage),
                         x.model.tied_embeddings(), 4, 2, false);
    const double weights = stage.memory.term(MemoryTerm::kWeights);
    EXPECT_NEAR(static_cast<double>(layout.weight_bytes), weights, 1e-3 * weights);
    const double states = stage.memory.term(MemoryTerm::kOptimizerStates);
    EXPECT_NEAR(12.0 * static_cast<double>(layout.shard_elements), states, 1e-3 * states);
  }
}

TEST(ParameterLayoutTest, RoutedExpertsFormAPartitionOfTheirOwn) {
  const MoeStage x = MaverickStage();
  const StageLayers layers = StageLayersOf(x.model, x.config, 1);
  const ParameterLayout layout =
      LayoutParameters(x.shapes, x.moe, layers, x.model.tied_embeddings(), 4, 2, false);
  EXPECT_EQ(layout.dense.group, RankGroup::kDataContext);
  EXPECT_EQ(layout.dense.shard_count, 4);
  EXPECT_EQ(layout.experts.group, RankGroup::kExpertData);
  EXPECT_EQ(layout.experts.shard_count, 2);
  EXPECT_EQ(layout.experts.tensor_alignment, std::lcm(kParameterAlignment, 2));
  // The experts follow the dense partition, each padded to equal shards of its own group, and
  // a rank's optimizer states hold its dense shard, then its expert shard.
  EXPECT_EQ(layout.dense.start, 0);
  EXPECT_EQ(layout.experts.start, layout.dense.end);
  EXPECT_EQ(layout.padded_elements, layout.experts.end);
  for (const ParameterPartition* p : {&layout.dense, &layout.experts}) {
    EXPECT_EQ(p->end - p->start, p->shard_count * p->shard_elements);
    EXPECT_EQ(p->shard_elements % kParameterAlignment, 0);
  }
  EXPECT_EQ(layout.experts.state_start, layout.dense.shard_elements);
  EXPECT_EQ(layout.shard_elements, layout.dense.shard_elements + layout.experts.shard_elements);
  // Regions tile the buffer: the chunk's dense region, then its expert region.
  ASSERT_EQ(layout.regions.size(), 2u);
  EXPECT_FALSE(layout.regions[0].experts);
  EXPECT_EQ(layout.regions[0].end, layout.dense.end);
  EXPECT_TRUE(layout.regions[1].experts);
  EXPECT_EQ(layout.regions[1].start, layout.experts.start);
  EXPECT_EQ(layout.regions[1].end, layout.experts.end);
  EXPECT_EQ(layout.regions[1].byte_start % kWeightRegionAlignment, 0);

  // Stage 1 holds layers 12 to 23; the odd ones hold experts (layer_step 2).
  ASSERT_EQ(layout.layers.size(), 12u);
  int64_t moe_layers = 0;
  for (size_t i = 0; i < layout.layers.size(); ++i) {
    SCOPED_TRACE(i);
    const LayerParameterOffsets& layer = layout.layers[i];
    const bool moe = (12 + i + 1) % 2 == 0;
    EXPECT_EQ(layers.moe_layers[i], moe);
    EXPECT_EQ(layer.moe(), moe);
    if (!moe) {
      EXPECT_TRUE(layout.dense.Contains(layer.gate_up));
      EXPECT_TRUE(layer.expert_fc1.empty());
      continue;
    }
    ++moe_layers;
    EXPECT_EQ(layer.gate_up, -1);
    EXPECT_EQ(layer.down, -1);
    for (int64_t dense : {layer.router, layer.shared_fc1, layer.shared_fc2}) {
      EXPECT_TRUE(layout.dense.Contains(dense));
      EXPECT_EQ(dense % layout.dense.tensor_alignment, 0);
    }
    ASSERT_EQ(static_cast<int64_t>(layer.expert_fc1.size()), x.moe.local_experts);
    ASSERT_EQ(static_cast<int64_t>(layer.expert_fc2.size()), x.moe.local_experts);
    for (size_t e = 0; e < layer.expert_fc1.size(); ++e) {
      for (int64_t expert : {layer.expert_fc1[e], layer.expert_fc2[e]}) {
        EXPECT_TRUE(layout.experts.Contains(expert));
        EXPECT_EQ((expert - layout.experts.start) % layout.experts.tensor_alignment, 0);
        EXPECT_EQ(&layout.PartitionOf(expert), &layout.experts);
        EXPECT_EQ(layout.WeightByte(expert),
                  layout.regions[1].byte_start + 2 * (expert - layout.experts.start));
      }
    }
    // One expert's fc1 then the next's, every fc1 before the fc2s.
    EXPECT_EQ(layer.expert_fc1[1] - layer.expert_fc1[0], x.moe.expert_fc1.WeightElements());
    EXPECT_LT(layer.expert_fc1.back(), layer.expert_fc2.front());
  }
  EXPECT_EQ(moe_layers, 6);
}

TEST(ParameterLayoutTest, ADenseModelHasAnEmptyExpertPartition) {
  const ModelSpec model = *FindModelPreset("llama3.2-1b");
  const TrainingSpec training = Training();
  const ParallelConfig config = Config(model, training, 1, 2);
  const ParameterLayout layout =
      LayoutParameters(ComputeShardShapes(model, training, config), StageLayersOf(model, config, 1),
                       model.tied_embeddings(), 8, false);
  EXPECT_EQ(layout.experts.start, layout.dense.end);
  EXPECT_EQ(layout.experts.end, layout.dense.end);
  EXPECT_EQ(layout.experts.shard_elements, 0);
  EXPECT_EQ(layout.shard_elements, layout.dense.shard_elements);
  for (const ParameterRegion& region : layout.regions) EXPECT_FALSE(region.experts);
}

}  // namespace
}  // namespace paratune
