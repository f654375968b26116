#include "worker/probe/shard_shapes.h"

#include "estimator/cluster_spec.h"
#include "estimator/performance_model.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

struct Configuration {
  ModelSpec model;
  TrainingSpec training;
  ParallelConfig config;
};

ParallelDims Dims(int64_t dp, int64_t tp, int64_t pp, int64_t cp, int64_t micro_batch = 1,
                  int64_t virtual_pipeline = 1) {
  ParallelDims dims;
  dims.dp = dp;
  dims.tp = tp;
  dims.pp = pp;
  dims.cp = cp;
  dims.micro_batch = micro_batch;
  dims.virtual_pipeline = virtual_pipeline;
  return dims;
}

Configuration Make(const char* preset, int64_t gbs, int64_t seq, ParallelDims dims) {
  ModelSpec model = *FindModelPreset(preset);
  TrainingOptions options;
  options.global_batch_size = gbs;
  options.seq_len = seq;
  TrainingSpec training = *TrainingSpec::Create(options);
  const int64_t world = dims.dp * dims.tp * dims.pp * dims.cp;
  ClusterSpec cluster = *ClusterSpec::Create(*FindGpuPreset("h100-80gb"), 1, world);
  PlacementRules rules;
  rules.allow_tp_cp_across_nodes = true;
  rules.allow_uneven_pipeline = true;
  absl::StatusOr<ParallelConfig> config =
      ParallelConfig::Create(model, training, cluster, rules, dims);
  EXPECT_TRUE(config.ok()) << config.status();
  return {model, training, *config};
}

TEST(ShardShapesTest, Llama8bTensorContextShard) {
  // Llama-3.1-8B: h 4096, f 14336, a 32, k 8, V 128256; tp 2, cp 2, b 2, s 8192.
  const Configuration x = Make("llama3.1-8b", 16, 8192, Dims(2, 2, 1, 2, 2));
  const ShardShapes shapes = ComputeShardShapes(x.model, x.training, x.config);
  EXPECT_EQ(shapes.sequence_per_rank, 4096);
  EXPECT_EQ(shapes.tokens, 8192);
  EXPECT_EQ(shapes.residual_tokens, 4096);
  EXPECT_TRUE(shapes.sequence_parallel);
  EXPECT_EQ(shapes.head_dim, 128);
  EXPECT_EQ(shapes.query_heads, 16);
  EXPECT_EQ(shapes.kv_heads, 4);
  EXPECT_EQ(shapes.QueryHeadsPerKvHead(), 4);
  EXPECT_EQ(shapes.qkv.outputs, (16 + 8) * 128);
  EXPECT_EQ(shapes.qkv.inputs, 4096);
  EXPECT_EQ(shapes.attention_output.inputs, 2048);
  EXPECT_EQ(shapes.gate_up.outputs, 14336);
  EXPECT_EQ(shapes.down.inputs, 7168);
  EXPECT_EQ(shapes.lm_head.outputs, 64128);
}

TEST(ShardShapesTest, KvHeadsAreReplicatedWhenTensorParallelExceedsThem) {
  const Configuration x = Make("llama3.1-70b", 16, 4096, Dims(1, 16, 1, 1));
  const ShardShapes shapes = ComputeShardShapes(x.model, x.training, x.config);
  EXPECT_EQ(shapes.query_heads, 4);
  EXPECT_EQ(shapes.kv_heads, 1);
  EXPECT_EQ(shapes.QueryHeadsPerKvHead(), 4);
}

TEST(ShardShapesTest, WithoutSequenceParallelismTheResidualStreamIsWhole) {
  ParallelDims dims = Dims(1, 4, 1, 1);
  dims.sequence_parallel = false;
  const Configuration x = Make("llama3.1-8b", 8, 2048, dims);
  const ShardShapes shapes = ComputeShardShapes(x.model, x.training, x.config);
  EXPECT_FALSE(shapes.sequence_parallel);
  EXPECT_EQ(shapes.residual_tokens, shapes.tokens);
}

// Every rank's forward and backward FLOPs over a step, summed, are the model FLOPs of the
// estimator (DESIGN.md §5.3), so the probe's TFLOP/s and the estimator's agree.
void ExpectShardsSumToModelFlops(const Configuration& x) {
  const ShardShapes shapes = ComputeShardShapes(x.model, x.training, x.config);
  const double ranks_per_stage = static_cast<double>(x.config.tp() * x.config.cp() * x.config.dp());
  const double micro_batches = static_cast<double>(x.config.NumMicroBatches(x.training));
  double total = 0;
  for (int64_t stage = 0; stage < x.config.pp(); ++stage) {
    const StageLayers layers = StageLayersOf(x.model, x.config, stage);
    double per_micro_batch =
        static_cast<double>(layers.TotalLayers()) * LayerForwardModelFlops(shapes);
    if (layers.lm_head) per_micro_batch += shapes.lm_head.ForwardFlops();
    total += 3 * per_micro_batch * micro_batches * ranks_per_stage;
  }
  const double expected = ModelFlopsPerStep(x.model, x.training);
  EXPECT_NEAR(total, expected, 1e-9 * expected) << x.config.ToString();
}

TEST(ShardShapesTest, ShardFlopsSumToTheModelFlopsOfAStep) {
  ExpectShardsSumToModelFlops(Make("llama3.1-8b", 32, 8192, Dims(2, 2, 2, 2, 1)));
  ExpectShardsSumToModelFlops(Make("llama3.1-70b", 64, 4096, Dims(1, 8, 4, 1, 2)));
  ExpectShardsSumToModelFlops(Make("llama3.2-1b", 16, 2048, Dims(4, 1, 2, 1, 1, 2)));
}

TEST(ShardShapesTest, CollectiveSizesFollowTheCommunicationModel) {
  // DESIGN.md §5.3: TP moves 2 s b h / c bytes per collective, a CP exchange
  // 2 (s/c) b (k h/a) / t x 2 bytes, a pipeline boundary 2 s b h / (t c).
  const Configuration x = Make("llama3.1-8b", 16, 8192, Dims(2, 2, 1, 2, 2));
  const ShardShapes shapes = ComputeShardShapes(x.model, x.training, x.config);
  const int64_t s = 8192, b = 2, h = 4096, c = 2, t = 2, k = 8, a = 32;
  EXPECT_EQ(TensorParallelActivationBytes(shapes), 2 * s * b * h / c);
  EXPECT_EQ(ContextParallelKvBytes(shapes), c * (2 * (s / c) * b * (k * h / a) / t * 2));
  EXPECT_EQ(PipelineBoundaryBytes(shapes), 2 * s * b * h / (t * c));
}

TEST(ShardShapesTest, EvenStagesSplitLayersOverChunks) {
  const Configuration x = Make("llama3.1-8b", 16, 2048, Dims(1, 1, 4, 1, 1, 2));
  for (int64_t stage = 0; stage < 4; ++stage) {
    const StageLayers layers = StageLayersOf(x.model, x.config, stage);
    EXPECT_EQ(layers.chunk_layers, (std::vector<int64_t>{4, 4}));
    EXPECT_EQ(layers.embedding, stage == 0);
    EXPECT_EQ(layers.lm_head, stage == 3);
  }
}

TEST(ShardShapesTest, UnevenStagesGiveTheEmbeddingAndLossALayerSlotEach) {
  // Llama-3.1-405B's 126 layers on pp 8 x vp 8 (NVIDIA's layout): 2 slots per chunk.
  const Configuration x = Make("llama3.1-405b", 128, 2048, Dims(1, 1, 8, 1, 1, 8));
  const StageLayers first = StageLayersOf(x.model, x.config, 0);
  const StageLayers middle = StageLayersOf(x.model, x.config, 3);
  const StageLayers last = StageLayersOf(x.model, x.config, 7);
  EXPECT_EQ(first.chunk_layers.front(), 1);
  EXPECT_EQ(first.chunk_layers.back(), 2);
  EXPECT_EQ(first.TotalLayers(), 15);
  EXPECT_EQ(middle.TotalLayers(), 16);
  EXPECT_EQ(last.chunk_layers.back(), 1);
  EXPECT_EQ(last.TotalLayers(), 15);
  EXPECT_EQ(last.MostLayersPerChunk(), 2);
  int64_t total = 0;
  for (int64_t stage = 0; stage < 8; ++stage) {
    total += StageLayersOf(x.model, x.config, stage).TotalLayers();
  }
  EXPECT_EQ(total, 126);
}

}  // namespace
}  // namespace paratune
