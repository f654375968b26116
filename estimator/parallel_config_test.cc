#include "estimator/parallel_config.h"

#include <cstdint>
#include <limits>

#include "estimator/field_error.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;

class ParallelConfigTest : public ::testing::Test {
 protected:
  // Llama-3.1-8B (32 heads, 8 kv heads, 32 layers), seq 8192, batch 1024, 2 nodes of 8.
  ParallelConfigTest()
      : model_(*FindModelPreset("llama3.1-8b")),
        training_(*TrainingSpec::Create({1024, 8192})),
        cluster_(*ClusterSpec::Create(*FindGpuPreset("h100-80gb"), 2, 8)) {}

  static ParallelDims Dims(int64_t dp, int64_t tp, int64_t pp, int64_t cp, int64_t b = 1) {
    return MakeParallelDims(dp, tp, pp, cp, b);
  }

  Rejection Check(const ParallelDims& dims, bool allow_across = false) const {
    PlacementRules rules;
    rules.allow_tp_cp_across_nodes = allow_across;
    return CheckRules(model_, training_, cluster_, rules, dims);
  }

  std::string Describe(const ParallelDims& dims) const {
    return DescribeRejection(Check(dims), model_, training_, cluster_, dims);
  }

  ModelSpec model_;
  TrainingSpec training_;
  ClusterSpec cluster_;
};

TEST_F(ParallelConfigTest, ValidConfiguration) {
  EXPECT_EQ(Check(Dims(8, 2, 1, 1)), Rejection::kValid);
  EXPECT_EQ(Check(Dims(1, 8, 2, 1)), Rejection::kValid);
  EXPECT_EQ(Check(Dims(2, 2, 2, 2)), Rejection::kValid);
}

TEST_F(ParallelConfigTest, WorldSizeAndFieldsBelowOne) {
  EXPECT_EQ(Check(Dims(4, 2, 1, 1)), Rejection::kWorldSizeMismatch);
  EXPECT_EQ(Describe(Dims(4, 2, 1, 1)),
            "config.data_parallel (4) x config.tensor_parallel (2) x "
            "config.pipeline_parallel (1) x config.context_parallel (1) = 8 does not equal the "
            "cluster's 16 GPUs (cluster.num_nodes (2) x cluster.gpus_per_node (8))");
  EXPECT_EQ(Check(Dims(16, 1, 1, 1, 0)), Rejection::kWorldSizeMismatch);
  ParallelDims dims = Dims(16, 1, 1, 1);
  dims.virtual_pipeline = 0;
  EXPECT_EQ(Check(dims), Rejection::kWorldSizeMismatch);
  EXPECT_EQ(Check(Dims(-16, -1, 1, 1)), Rejection::kWorldSizeMismatch);
}

TEST_F(ParallelConfigTest, HugeSizesDoNotOverflowIntoValidConfigurations) {
  constexpr int64_t kHuge = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(Check(Dims(16, kHuge, 1, 1)), Rejection::kWorldSizeMismatch);
  EXPECT_EQ(Describe(Dims(16, kHuge, 1, 1)),
            "config.data_parallel (16) x config.tensor_parallel (9223372036854775807) x "
            "config.pipeline_parallel (1) x config.context_parallel (1) does not equal the "
            "cluster's 16 GPUs (cluster.num_nodes (2) x cluster.gpus_per_node (8))");
  // (2^62 + 4) x 4 wraps to 16 in 64 bits.
  EXPECT_EQ(Check(Dims((int64_t{1} << 62) + 4, 4, 1, 1)), Rejection::kWorldSizeMismatch);

  // 16 x (2^60 + 64) wraps to 1024, the global batch.
  EXPECT_EQ(Check(Dims(16, 1, 1, 1, (int64_t{1} << 60) + 64)), Rejection::kBatchDivisibility);
  EXPECT_EQ(Describe(Dims(16, 1, 1, 1, kHuge)),
            "config.micro_batch_size (9223372036854775807) is larger than "
            "training.global_batch_size (1024)");

  // 4 x (2^62 + 8) wraps to 32, the layers.
  ParallelDims dims = Dims(4, 1, 4, 1);
  dims.virtual_pipeline = (int64_t{1} << 62) + 8;
  EXPECT_EQ(Check(dims), Rejection::kVirtualPipelineLayers);
  dims.virtual_pipeline = kHuge;
  EXPECT_EQ(Describe(dims),
            "config.virtual_pipeline (9223372036854775807) is larger than model.num_layers (32)");
}

TEST_F(ParallelConfigTest, TensorParallelAndHeads) {
  // 3 divides neither 32 heads nor the world; use a 48-GPU cluster to isolate the rule.
  const ClusterSpec cluster = *ClusterSpec::Create(*FindGpuPreset("h100-80gb"), 6, 8);
  const ParallelDims dims = Dims(16, 3, 1, 1);
  PlacementRules rules;
  rules.allow_tp_cp_across_nodes = true;
  const Rejection rejection = CheckRules(model_, training_, cluster, rules, dims);
  EXPECT_EQ(rejection, Rejection::kTpHeads);
  EXPECT_EQ(DescribeRejection(rejection, model_, training_, cluster, dims),
            "config.tensor_parallel (3) does not divide model.num_attention_heads (32)");
}

TEST_F(ParallelConfigTest, KvHeadsMayBeReplicatedButNotSplitUnevenly) {
  // tp 16 > 8 kv heads: Megatron replicates each kv head twice.
  EXPECT_EQ(Check(Dims(1, 16, 1, 1), /*allow_across=*/true), Rejection::kValid);
  // 12 heads, 6 kv heads, tp 4: 4 divides 12 but neither 4 | 6 nor 6 | 4.
  const ModelSpec model = *ModelSpec::Create("x", {3072, 8192, 4, 12, 6, 1000, false});
  const ParallelDims dims = Dims(4, 4, 1, 1);
  const Rejection rejection = CheckRules(model, training_, cluster_, {}, dims);
  EXPECT_EQ(rejection, Rejection::kTpKvHeads);
  EXPECT_THAT(DescribeRejection(rejection, model, training_, cluster_, dims),
              HasSubstr("config.tensor_parallel (4) does not divide model.num_kv_heads (6)"));
}

TEST_F(ParallelConfigTest, PipelineAndVirtualPipeline) {
  const ClusterSpec cluster = *ClusterSpec::Create(*FindGpuPreset("h100-80gb"), 3, 8);
  const ParallelDims dims = Dims(8, 1, 3, 1);
  const Rejection rejection = CheckRules(model_, training_, cluster, {}, dims);
  EXPECT_EQ(rejection, Rejection::kPpLayers);
  EXPECT_EQ(DescribeRejection(rejection, model_, training_, cluster, dims),
            "config.pipeline_parallel (3) does not divide model.num_layers (32)");

  ParallelDims interleaved = Dims(4, 2, 2, 1);
  interleaved.virtual_pipeline = 2;
  EXPECT_EQ(Check(interleaved), Rejection::kValid);
  interleaved.virtual_pipeline = 32;  // 64 does not divide 32 layers
  EXPECT_EQ(Check(interleaved), Rejection::kVirtualPipelineLayers);
  EXPECT_EQ(Describe(interleaved),
            "config.virtual_pipeline (32) x config.pipeline_parallel (2) = 64 does not divide "
            "model.num_layers (32)");
  ParallelDims no_pipeline = Dims(8, 2, 1, 1);
  no_pipeline.virtual_pipeline = 2;
  EXPECT_EQ(Check(no_pipeline), Rejection::kVirtualPipelineLayers);
  EXPECT_EQ(Describe(no_pipeline),
            "config.virtual_pipeline (2) > 1 requires config.pipeline_parallel (1) > 1");
}

TEST_F(ParallelConfigTest, ContextParallelNeedsTwoChunksPerRank) {
  const TrainingSpec odd = *TrainingSpec::Create({1024, 8196});  // 8196 = 4 x 2049
  const ParallelDims dims = Dims(4, 1, 1, 4);
  const Rejection rejection = CheckRules(model_, odd, cluster_, {}, dims);
  EXPECT_EQ(rejection, Rejection::kCpSequence);
  EXPECT_EQ(DescribeRejection(rejection, model_, odd, cluster_, dims),
            "config.context_parallel (4) x 2 = 8 does not divide training.seq_len (8196)");
  EXPECT_EQ(CheckRules(model_, odd, cluster_, {}, Dims(8, 1, 1, 2)), Rejection::kValid);
  // cp = 1 has no chunking requirement even for an odd sequence.
  const TrainingSpec odd_seq = *TrainingSpec::Create({1024, 8191});
  EXPECT_EQ(CheckRules(model_, odd_seq, cluster_, {}, Dims(16, 1, 1, 1)), Rejection::kValid);
}

TEST_F(ParallelConfigTest, BatchDivisibility) {
  EXPECT_EQ(Check(Dims(16, 1, 1, 1, 128)), Rejection::kBatchDivisibility);
  EXPECT_EQ(Describe(Dims(16, 1, 1, 1, 128)),
            "config.data_parallel (16) x config.micro_batch_size (128) = 2048 does not divide "
            "training.global_batch_size (1024)");
  EXPECT_EQ(Check(Dims(16, 1, 1, 1, 64)), Rejection::kValid);
}

TEST_F(ParallelConfigTest, InterleavingNeedsPipelineParallelToDivideTheMicroBatches) {
  // 1020 / (dp 4 x b 1) = 255 micro-batches: not a multiple of pp 4.
  const TrainingSpec training = *TrainingSpec::Create({1020, 8192});
  ParallelDims dims = Dims(4, 1, 4, 1);
  EXPECT_EQ(CheckRules(model_, training, cluster_, {}, dims), Rejection::kValid);
  dims.virtual_pipeline = 2;
  const Rejection rejection = CheckRules(model_, training, cluster_, {}, dims);
  EXPECT_EQ(rejection, Rejection::kInterleavedMicroBatches);
  EXPECT_EQ(DescribeRejection(rejection, model_, training, cluster_, dims),
            "config.virtual_pipeline (2) > 1 needs config.pipeline_parallel (4) to divide the "
            "micro-batches per step, training.global_batch_size (1020) / (config.data_parallel "
            "(4) x config.micro_batch_size (1)) = 255");
  // 1024 / 4 = 256 micro-batches interleave fine.
  EXPECT_EQ(Check(dims), Rejection::kValid);
}

TEST_F(ParallelConfigTest, TpTimesCpWithinANode) {
  EXPECT_EQ(Check(Dims(1, 16, 1, 1)), Rejection::kTpCpAcrossNodes);
  EXPECT_EQ(Check(Dims(1, 4, 1, 4)), Rejection::kTpCpAcrossNodes);
  EXPECT_EQ(Describe(Dims(1, 4, 1, 4)),
            "config.tensor_parallel (4) x config.context_parallel (4) = 16 does not divide "
            "cluster.gpus_per_node (8); tp x cp across nodes is not allowed");
  EXPECT_EQ(Check(Dims(1, 4, 1, 4), /*allow_across=*/true), Rejection::kValid);
  EXPECT_EQ(Check(Dims(2, 8, 1, 1)), Rejection::kValid);
  // Within a node, tp x cp must tile it: 6 GPUs per node, tp x cp = 4 straddles nodes.
  const ClusterSpec six = *ClusterSpec::Create(*FindGpuPreset("h100-80gb"), 2, 6);
  const TrainingSpec training = *TrainingSpec::Create({768, 8192});
  EXPECT_EQ(CheckRules(model_, training, six, {}, Dims(3, 4, 1, 1)), Rejection::kTpCpAcrossNodes);
  EXPECT_EQ(CheckRules(model_, training, six, {}, Dims(6, 2, 1, 1)), Rejection::kValid);
}

TEST_F(ParallelConfigTest, RuleTextsAreDistinct) {
  for (int i = 0; i < static_cast<int>(Rejection::kCount); ++i) {
    for (int j = i + 1; j < static_cast<int>(Rejection::kCount); ++j) {
      EXPECT_STRNE(RejectionRule(static_cast<Rejection>(i)),
                   RejectionRule(static_cast<Rejection>(j)));
    }
  }
  EXPECT_STREQ(RejectionRule(Rejection::kTpHeads), "tensor_parallel does not divide heads");
}

TEST_F(ParallelConfigTest, CreateNamesFieldsBelowOneThenRules) {
  absl::StatusOr<ParallelConfig> config =
      ParallelConfig::Create(model_, training_, cluster_, {}, Dims(16, 1, 1, 1, 0));
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(config.status().message(), "config.micro_batch_size (0) must be >= 1");
  config = ParallelConfig::Create(model_, training_, cluster_, {}, Dims(1, 16, 1, 1));
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(config.status().message(), HasSubstr("config.tensor_parallel (16) x"));
  // A broken rule is a field error against the first field its message names.
  config = ParallelConfig::Create(model_, training_, cluster_, {}, Dims(16, 1, 1, 1, 2048));
  ASSERT_TRUE(FieldFaultOf(config.status()).has_value());
  EXPECT_EQ(FieldFaultOf(config.status())->field, "config.micro_batch_size");
  EXPECT_EQ(config.status().message(),
            "config.micro_batch_size (2048) is larger than training.global_batch_size (1024)");
  config = ParallelConfig::Create(model_, training_, cluster_, {}, Dims(8, 2, 1, 1, 2));
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->dp(), 8);
  EXPECT_EQ(config->tp(), 2);
  EXPECT_EQ(config->NumMicroBatches(training_), 64);
}

TEST_F(ParallelConfigTest, ToString) {
  ParallelDims dims = Dims(2, 2, 1, 1);
  EXPECT_EQ(ParallelConfig::FromCheckedDims(dims).ToString(), "dp2 tp2 pp1 cp1 mbs1");
  dims = Dims(1, 4, 2, 2, 4);
  dims.virtual_pipeline = 2;
  dims.recompute = Recompute::kSelective;
  EXPECT_EQ(ParallelConfig::FromCheckedDims(dims).ToString(),
            "dp1 tp4 pp2 cp2 mbs4 vp2 recompute=selective");
  dims.virtual_pipeline = 1;
  dims.recompute = Recompute::kFull;
  EXPECT_EQ(ParallelConfig::FromCheckedDims(dims).ToString(),
            "dp1 tp4 pp2 cp2 mbs4 recompute=full");
}

TEST_F(ParallelConfigTest, ToStringShowsExpertSizesWhereNotTheDefault) {
  ParallelDims dims = Dims(8, 2, 1, 1);
  dims.etp = 2;  // the same as tp
  EXPECT_EQ(ParallelConfig::FromCheckedDims(dims).ToString(), "dp8 tp2 pp1 cp1 mbs1");
  dims.ep = 8;
  dims.etp = 1;
  EXPECT_EQ(ParallelConfig::FromCheckedDims(dims).ToString(), "dp8 tp2 pp1 cp1 mbs1 ep8 etp1");
  EXPECT_EQ(ParallelConfig::FromCheckedDims(dims).ep(), 8);
  EXPECT_EQ(ParallelConfig::FromCheckedDims(dims).etp(), 1);
  dims.etp = 0;
  EXPECT_EQ(ParallelConfig::FromCheckedDims(dims).etp(), 2);
}

TEST_F(ParallelConfigTest, DenseModelKeepsTheDefaultExpertSizes) {
  ParallelDims dims = Dims(8, 2, 1, 1);
  EXPECT_EQ(dims.ep, 1);
  EXPECT_EQ(dims.etp, 0);
  EXPECT_EQ(ExpertTensorParallel(dims), 2);
  EXPECT_EQ(Check(dims), Rejection::kValid);
  dims.etp = 2;  // stated, the same as tp
  EXPECT_EQ(Check(dims), Rejection::kValid);

  dims.ep = 2;
  EXPECT_EQ(Check(dims), Rejection::kExpertParallelDense);
  EXPECT_EQ(Describe(dims),
            "config.expert_parallel (2) > 1 needs experts to split; model.moe.num_experts is 0 (a "
            "dense model)");
  dims.ep = 1;
  dims.etp = 4;
  EXPECT_EQ(Check(dims), Rejection::kExpertTensorParallelDense);
  EXPECT_EQ(Describe(dims),
            "config.expert_tensor_parallel (4) other than config.tensor_parallel (2) needs experts "
            "to split; model.moe.num_experts is 0 (a dense model)");
  // Below one: the expert grid cannot be formed.
  dims.etp = -1;
  EXPECT_EQ(Check(dims), Rejection::kExpertWorldSize);
  dims.etp = 0;
  dims.ep = 0;
  EXPECT_EQ(Check(dims), Rejection::kExpertWorldSize);
  EXPECT_EQ(Describe(dims),
            "config.expert_parallel (0) x config.expert_tensor_parallel (2, "
            "config.tensor_parallel's) x config.pipeline_parallel (1) does not divide the "
            "cluster's 16 GPUs; the expert layers' etp x ep x expert data parallel x pp must use "
            "them all");
}

TEST_F(ParallelConfigTest, CreateNamesExpertFields) {
  ParallelDims dims = Dims(8, 2, 1, 1);
  dims.ep = 0;
  absl::StatusOr<ParallelConfig> config =
      ParallelConfig::Create(model_, training_, cluster_, {}, dims);
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(config.status().message(), "config.expert_parallel (0) must be >= 1");
  dims.ep = 1;
  dims.etp = -2;
  config = ParallelConfig::Create(model_, training_, cluster_, {}, dims);
  ASSERT_TRUE(FieldFaultOf(config.status()).has_value());
  EXPECT_EQ(FieldFaultOf(config.status())->field, "config.expert_tensor_parallel");
  EXPECT_EQ(config.status().message(),
            "config.expert_tensor_parallel (-2) must be >= 0; 0 means config.tensor_parallel");
  dims.etp = 0;
  dims.ep = 4;
  config = ParallelConfig::Create(model_, training_, cluster_, {}, dims);
  ASSERT_TRUE(FieldFaultOf(config.status()).has_value());
  EXPECT_EQ(FieldFaultOf(config.status())->field, "config.expert_parallel");
}

// Megatron-LM core_v0.19.0's rules for the expert layers (docs/estimator.md, "Expert
// parallelism"), on Mixtral-8x7B: 8 experts of FFN width 14336, 32 heads, 8 kv heads.
class ExpertParallelRulesTest : public ParallelConfigTest {
 protected:
  ExpertParallelRulesTest() { model_ = *FindModelPreset("mixtral-8x7b"); }

  static ParallelDims ExpertDims(int64_t dp, int64_t tp, int64_t pp, int64_t cp, int64_t ep,
                                 int64_t etp) {
    ParallelDims dims = MakeParallelDims(dp, tp, pp, cp, 1);
    dims.ep = ep;
    dims.etp = etp;
    return dims;
  }
};

TEST_F(ExpertParallelRulesTest, ParallelFoldingFactorsTheSameGpusTwice) {
  // Attention dp16; experts ep8 x expert-dp 2.
  EXPECT_EQ(Check(ExpertDims(16, 1, 1, 1, 8, 0)), Rejection::kValid);
  // Attention tp2 x dp8; experts etp2 x ep8 (expert-dp 1).
  EXPECT_EQ(Check(ExpertDims(8, 2, 1, 1, 8, 0)), Rejection::kValid);
  // Attention tp4 x cp2 x dp2; experts etp1 x ep8 x expert-dp 2: cp folds into ep.
  EXPECT_EQ(Check(ExpertDims(2, 4, 1, 2, 8, 1)), Rejection::kValid);
  // Attention tp8 x pp2; experts etp1 x ep8 x pp2.
  EXPECT_EQ(Check(ExpertDims(1, 8, 2, 1, 8, 1)), Rejection::kValid);
  // ep 1 keeps every expert on every rank.
  EXPECT_EQ(Check(ExpertDims(16, 1, 1, 1, 1, 0)), Rejection::kValid);
}

TEST_F(ExpertParallelRulesTest, ExpertParallelDividesTheExperts) {
  const ParallelDims dims = ExpertDims(16, 1, 1, 1, 3, 0);
  EXPECT_EQ(Check(dims), Rejection::kExpertParallelExperts);
  EXPECT_EQ(Describe(dims), "config.expert_parallel (3) does not divide model.moe.num_experts (8)");
  EXPECT_EQ(Check(ExpertDims(16, 1, 1, 1, 16, 0)), Rejection::kExpertParallelExperts);
}

TEST_F(ExpertParallelRulesTest, ExpertGridDividesTheGpus) {
  // etp2 (tp's) x ep8 x pp2 = 32 on 16 GPUs.
  ParallelDims dims = ExpertDims(4, 2, 2, 1, 8, 0);
  EXPECT_EQ(Check(dims), Rejection::kExpertWorldSize);
  EXPECT_EQ(Describe(dims),
            "config.expert_parallel (8) x config.expert_tensor_parallel (2, "
            "config.tensor_parallel's) x config.pipeline_parallel (2) = 32 does not divide the "
            "cluster's 16 GPUs; the expert layers' etp x ep x expert data parallel x pp must use "
            "them all");
  // etp 1 in its place folds: 1 x 8 x 2 = 16.
  dims.etp = 1;
  EXPECT_EQ(Check(dims), Rejection::kValid);
  dims.etp = 4;
  EXPECT_EQ(Check(dims), Rejection::kExpertWorldSize);
  EXPECT_THAT(Describe(dims), HasSubstr("config.expert_tensor_parallel (4) x"));
}

TEST_F(ExpertParallelRulesTest, HugeExpertSizesDoNotOverflow) {
  constexpr int64_t kHuge = int64_t{1} << 40;
  ParallelDims dims = ExpertDims(16, 1, 1, 1, 8, kHuge);
  EXPECT_EQ(Check(dims), Rejection::kExpertWorldSize);
  EXPECT_THAT(Describe(dims), HasSubstr("config.pipeline_parallel (1) does not divide"));
  dims = ExpertDims(16, 1, 1, 1, std::numeric_limits<int64_t>::max(), 0);
  EXPECT_EQ(Check(dims), Rejection::kExpertParallelExperts);
}

TEST_F(ExpertParallelRulesTest, ExpertTensorParallelDividesTheExpertWidth) {
  // A Mixtral-like model whose experts are 1000 wide: etp 8 splits them, 16 does not.
  ModelDimensions dimensions = model_.dims();
  dimensions.moe.expert_ffn_hidden_size = 1000;
  model_ = *ModelSpec::Create("narrow-experts", dimensions);
  EXPECT_EQ(Check(ExpertDims(2, 8, 1, 1, 1, 0)), Rejection::kValid);
  const ParallelDims dims = ExpertDims(16, 1, 1, 1, 1, 16);
  EXPECT_EQ(Check(dims), Rejection::kExpertTensorParallelFfn);
  EXPECT_EQ(Describe(dims),
            "config.expert_tensor_parallel (16) does not divide "
            "model.moe.expert_ffn_hidden_size (1000)");
}

TEST_F(ExpertParallelRulesTest, TensorParallelNeedsSequenceParallelism) {
  ParallelDims dims = ExpertDims(8, 2, 1, 1, 8, 0);
  dims.sequence_parallel = false;
  EXPECT_EQ(Check(dims), Rejection::kMoeSequenceParallel);
  EXPECT_EQ(Describe(dims),
            "config.sequence_parallel (false) with config.tensor_parallel (2) > 1 is refused for "
            "a mixture-of-experts model: Megatron-LM's MoE layers train only with sequence "
            "parallelism there");
  // With tp 1 there is nothing to parallelize over sequences; with ep 1 the rule still holds.
  EXPECT_EQ(Check(MakeParallelDims(16, 1, 1, 1, 1)), Rejection::kValid);
  dims.ep = 1;
  EXPECT_EQ(Check(dims), Rejection::kMoeSequenceParallel);
}

TEST_F(ExpertParallelRulesTest, DeepEpNeedsMoreThanOneExpertRank) {
  TrainingOptions options;
  options.global_batch_size = 1024;
  options.seq_len = 8192;
  options.moe_token_dispatcher = TokenDispatcher::kFlexDeepEp;
  training_ = *TrainingSpec::Create(options);
  const ParallelDims dims = ExpertDims(16, 1, 1, 1, 1, 0);
  EXPECT_EQ(Check(dims), Rejection::kFlexDeepEpGroup);
  EXPECT_EQ(Describe(dims),
            "config.expert_parallel (1) x config.expert_tensor_parallel (1) = 1 leaves "
            "training.moe_token_dispatcher flex_deepep nothing to dispatch: DeepEP needs "
            "etp x ep > 1");
  EXPECT_EQ(Check(ExpertDims(16, 1, 1, 1, 2, 0)), Rejection::kValid);
  EXPECT_EQ(Check(ExpertDims(8, 2, 1, 1, 1, 0)), Rejection::kValid);  // etp 2 (tp's)
  // HybridEP has no such rule (token_dispatcher.py:1779-1786).
  options.moe_token_dispatcher = TokenDispatcher::kFlexHybridEp;
  training_ = *TrainingSpec::Create(options);
  EXPECT_EQ(Check(dims), Rejection::kValid);
}

TEST_F(ExpertParallelRulesTest, AttentionRulesComeFirst) {
  // tp 16 breaks the node rule before any expert rule is looked at.
  EXPECT_EQ(Check(ExpertDims(1, 16, 1, 1, 3, 0)), Rejection::kTpCpAcrossNodes);
}

TEST(MakeParallelDimsTest, SequenceParallelExactlyWithTensorParallel) {
  const ParallelDims dims = MakeParallelDims(2, 4, 8, 2, 3);
  EXPECT_EQ(dims.dp, 2);
  EXPECT_EQ(dims.tp, 4);
  EXPECT_EQ(dims.pp, 8);
  EXPECT_EQ(dims.cp, 2);
  EXPECT_EQ(dims.micro_batch, 3);
  EXPECT_EQ(dims.virtual_pipeline, 1);
  EXPECT_EQ(dims.recompute, Recompute::kNone);
  EXPECT_TRUE(dims.sequence_parallel);
  EXPECT_FALSE(MakeParallelDims(8, 1, 1, 1, 1).sequence_parallel);
}

TEST_F(ParallelConfigTest, HybridShardGroupIsAProperDivisorOfDataParallel) {
  ParallelDims dims = Dims(8, 2, 1, 1);
  dims.dp_sharding = DataParallelSharding::kFull;
  for (int64_t group : {0, 1, 2, 4}) {
    dims.dp_shard_group = group;
    EXPECT_EQ(Check(dims), Rejection::kValid) << group;
  }
  dims.dp_shard_group = 3;
  EXPECT_EQ(Check(dims), Rejection::kDpShardGroup);
  EXPECT_EQ(Describe(dims),
            "config.dp_shard_group (3) must be 0 (shard over all config.data_parallel ranks) or "
            "a divisor of config.data_parallel (8) smaller than it (hybrid sharding)");
  dims.dp_shard_group = 8;  // the same as 0
  EXPECT_EQ(Check(dims), Rejection::kDpShardGroup);
  dims.dp_shard_group = -1;
  EXPECT_EQ(Check(dims), Rejection::kDpShardGroup);
  dims.dp_shard_group = 2;
  dims.dp_sharding = DataParallelSharding::kNone;
  EXPECT_EQ(Describe(dims),
            "config.dp_shard_group (2) needs sharded states to group; config.dp_sharding is none");
}

TEST_F(ParallelConfigTest, TorchTitanHasNoOptimizerOnlySharding) {
  TrainingOptions options = training_.options();
  options.framework = Framework::kTorchTitan;
  const TrainingSpec titan = *TrainingSpec::Create(options);
  EXPECT_EQ(titan.DefaultDataParallelSharding(), DataParallelSharding::kFull);
  ParallelDims dims = Dims(8, 2, 1, 1);
  dims.dp_sharding = DataParallelSharding::kOptimizer;
  EXPECT_EQ(CheckRules(model_, titan, cluster_, PlacementRules(), dims),
            Rejection::kFrameworkSharding);
  EXPECT_EQ(DescribeRejection(Rejection::kFrameworkSharding, model_, titan, cluster_, dims),
            "config.dp_sharding (optimizer) is not a mode of training.framework (torchtitan): "
            "its FSDP shards the gradients with the optimizer states; use gradients, full or "
            "none");
  for (DataParallelSharding mode : {DataParallelSharding::kNone, DataParallelSharding::kGradients,
                                    DataParallelSharding::kFull}) {
    dims.dp_sharding = mode;
    EXPECT_EQ(CheckRules(model_, titan, cluster_, PlacementRules(), dims), Rejection::kValid);
  }
}

TEST_F(ParallelConfigTest, Fp8ParameterGatherNeedsWeightsToGather) {
  TrainingOptions options = training_.options();
  options.fp8 = true;
  options.fp8_param_gather = true;
  const TrainingSpec megatron = *TrainingSpec::Create(options);
  ParallelDims dims = Dims(8, 2, 1, 1);
  EXPECT_EQ(CheckRules(model_, megatron, cluster_, PlacementRules(), dims), Rejection::kValid);
  dims.dp_sharding = DataParallelSharding::kNone;
  EXPECT_EQ(CheckRules(model_, megatron, cluster_, PlacementRules(), dims),
            Rejection::kFp8ParamGatherSharding);
  options.framework = Framework::kTorchTitan;
  const TrainingSpec titan = *TrainingSpec::Create(options);
  dims.dp_sharding = DataParallelSharding::kGradients;
  EXPECT_EQ(DescribeRejection(Rejection::kFp8ParamGatherSharding, model_, titan, cluster_, dims),
            "config.dp_sharding (gradients) cannot gather fp8 weights (training.fp8_param_gather "
            "true) under training.framework torchtitan: it needs full (FSDP's float8 "
            "all-gather)");
  dims.dp_sharding = DataParallelSharding::kFull;
  EXPECT_EQ(CheckRules(model_, titan, cluster_, PlacementRules(), dims), Rejection::kValid);
}

TEST_F(ParallelConfigTest, LabelNamesShardingWhereNotTheDistributedOptimizer) {
  ParallelDims dims = Dims(8, 2, 1, 1);
  EXPECT_EQ(ParallelConfig::FromCheckedDims(dims).ToString(), "dp8 tp2 pp1 cp1 mbs1");
  dims.dp_sharding = DataParallelSharding::kFull;
  dims.dp_shard_group = 4;
  const ParallelConfig config = ParallelConfig::FromCheckedDims(dims);
  EXPECT_EQ(config.ToString(), "dp8 tp2 pp1 cp1 mbs1 dp_sharding=full dp_shard_group=4");
  EXPECT_EQ(config.dp_shard_ranks(), 4);
  dims.dp_sharding = DataParallelSharding::kNone;
  dims.dp_shard_group = 0;
  EXPECT_EQ(DataParallelShardRanks(dims), 1);
}

}  // namespace
}  // namespace paratune
