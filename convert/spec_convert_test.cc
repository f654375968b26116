#include "convert/spec_convert.h"

#include "estimator/field_error.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;

// A field error (estimator/field_error.h) whose message holds `substring`.
void ExpectInvalid(const absl::Status& status, const std::string& substring) {
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr(substring));
  EXPECT_TRUE(FieldFaultOf(status).has_value()) << status;
}

v1::ModelSpec ExplicitModel() {
  v1::ModelSpec proto;
  proto.set_hidden_size(4096);
  proto.set_ffn_hidden_size(14336);
  proto.set_num_layers(32);
  proto.set_num_attention_heads(32);
  proto.set_num_kv_heads(8);
  proto.set_vocab_size(128256);
  return proto;
}

TEST(ModelSpecFromProtoTest, PresetIsCaseInsensitive) {
  v1::ModelSpec proto;
  proto.set_preset("Llama3.1-8B");
  absl::StatusOr<ModelSpec> model = ModelSpecFromProto(proto);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->name(), "llama3.1-8b");
  EXPECT_EQ(model->hidden_size(), 4096);
}

TEST(ModelSpecFromProtoTest, UnknownPresetIsInvalidArgument) {
  v1::ModelSpec proto;
  proto.set_preset("llama9");
  const absl::Status status = ModelSpecFromProto(proto).status();
  ExpectInvalid(status, "model.preset (\"llama9\") is not a known model; known: llama2-7b");
}

TEST(ModelSpecFromProtoTest, PresetWithDimensionsIsInvalid) {
  v1::ModelSpec proto;
  proto.set_preset("llama3.1-8b");
  proto.set_num_layers(16);
  ExpectInvalid(ModelSpecFromProto(proto).status(),
                "model.num_layers (16) must be 0 when model.preset (\"llama3.1-8b\") is set");
  proto.set_num_layers(0);
  proto.set_tied_embeddings(true);
  ExpectInvalid(ModelSpecFromProto(proto).status(), "model.tied_embeddings");
}

TEST(ModelSpecFromProtoTest, ExplicitModelNeedsEveryDimension) {
  absl::StatusOr<ModelSpec> model = ModelSpecFromProto(ExplicitModel());
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->name(), "custom");
  EXPECT_EQ(model->ParameterCount(), FindModelPreset("llama3.1-8b")->ParameterCount());

  v1::ModelSpec proto = ExplicitModel();
  proto.clear_vocab_size();
  ExpectInvalid(ModelSpecFromProto(proto).status(), "model.vocab_size (0)");
  proto = ExplicitModel();
  proto.set_num_kv_heads(5);
  ExpectInvalid(ModelSpecFromProto(proto).status(),
                "model.num_kv_heads (5) does not divide model.num_attention_heads (32)");
  proto = ExplicitModel();
  proto.set_tied_embeddings(true);
  ASSERT_TRUE(ModelSpecFromProto(proto).ok());
  EXPECT_TRUE(ModelSpecFromProto(proto)->tied_embeddings());
}

TEST(ModelSpecFromProtoTest, MixtureOfExpertsPresetsConvert) {
  v1::ModelSpec proto;
  proto.set_preset("llama4-maverick");
  absl::StatusOr<ModelSpec> model = ModelSpecFromProto(proto);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_TRUE(model->is_moe());
  EXPECT_EQ(model->moe().num_experts, 128);
  EXPECT_EQ(model->MoeLayerCount(), 24);
}

TEST(ModelSpecFromProtoTest, PresetWithMoeFieldsIsInvalid) {
  v1::ModelSpec proto;
  proto.set_preset("mixtral-8x7b");
  proto.set_num_experts(16);
  ExpectInvalid(ModelSpecFromProto(proto).status(),
                "model.num_experts (16) must be 0 when model.preset (\"mixtral-8x7b\") is set");
  proto.clear_num_experts();
  proto.set_head_dim(64);
  ExpectInvalid(ModelSpecFromProto(proto).status(), "model.head_dim (64) must be 0");
  proto.clear_head_dim();
  proto.set_moe_router_score(v1::MOE_ROUTER_SCORE_SIGMOID);
  ExpectInvalid(ModelSpecFromProto(proto).status(),
                "model.moe_router_score (2) must be 0 when model.preset (\"mixtral-8x7b\") is set");
}

// Mixtral 8x7B's published configuration given field by field.
v1::ModelSpec ExplicitMixtral() {
  v1::ModelSpec proto = ExplicitModel();
  proto.set_vocab_size(32000);
  proto.set_num_experts(8);
  proto.set_moe_router_top_k(2);
  proto.set_moe_ffn_hidden_size(14336);
  return proto;
}

TEST(ModelSpecFromProtoTest, ExplicitMixtureOfExpertsCarriesEveryField) {
  absl::StatusOr<ModelSpec> model = ModelSpecFromProto(ExplicitMixtral());
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->ParameterCount(), FindModelPreset("mixtral-8x7b")->ParameterCount());
  EXPECT_EQ(model->ActiveParameterCount(), FindModelPreset("mixtral-8x7b")->ActiveParameterCount());
  EXPECT_EQ(model->moe().layer_step, 1);  // 0 is every layer
  EXPECT_EQ(model->moe().router_score, RouterScore::kSoftmax);

  v1::ModelSpec proto = ExplicitMixtral();
  proto.set_num_shared_experts(1);
  proto.set_shared_expert_ffn_hidden_size(8192);
  proto.set_moe_layer_step(2);
  proto.set_moe_first_dense_layers(1);
  proto.set_moe_router_score(v1::MOE_ROUTER_SCORE_SIGMOID);
  proto.set_head_dim(256);
  model = ModelSpecFromProto(proto);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->moe().num_shared_experts, 1);
  EXPECT_EQ(model->moe().shared_expert_ffn_hidden_size, 8192);
  EXPECT_EQ(model->moe().layer_step, 2);
  EXPECT_EQ(model->moe().first_dense_layers, 1);
  EXPECT_EQ(model->moe().router_score, RouterScore::kSigmoid);
  EXPECT_EQ(model->head_dim(), 256);
}

TEST(ModelSpecFromProtoTest, BadMoeFieldsNameThemselves) {
  v1::ModelSpec proto = ExplicitMixtral();
  proto.set_moe_router_top_k(9);
  ExpectInvalid(ModelSpecFromProto(proto).status(), "model.moe_router_top_k (9) must be in [1, 8]");
  proto = ExplicitMixtral();
  proto.set_moe_first_dense_layers(32);
  ExpectInvalid(ModelSpecFromProto(proto).status(),
                "model.moe_first_dense_layers (32) must be in [0, 31]");
  proto = ExplicitModel();
  proto.set_moe_router_top_k(2);
  ExpectInvalid(ModelSpecFromProto(proto).status(),
                "model.moe_router_top_k (2) must be 0 when model.num_experts is 0");
  proto = ExplicitModel();
  proto.set_moe_router_score(v1::MOE_ROUTER_SCORE_SOFTMAX);
  ExpectInvalid(ModelSpecFromProto(proto).status(),
                "model.moe_router_score (MOE_ROUTER_SCORE_SOFTMAX) must be unset when "
                "model.num_experts is 0");
  proto = ExplicitMixtral();
  proto.set_moe_router_score(static_cast<v1::MoeRouterScore>(7));
  ExpectInvalid(ModelSpecFromProto(proto).status(),
                "model.moe_router_score (7) is not a known router score");
}

TEST(TrainingSpecFromProtoTest, UnsetOptionalsAreTrue) {
  v1::TrainingSpec proto;
  proto.set_global_batch_size(1024);
  proto.set_seq_len(8192);
  absl::StatusOr<TrainingSpec> training = TrainingSpecFromProto(proto);
  ASSERT_TRUE(training.ok()) << training.status();
  EXPECT_TRUE(training->distributed_optimizer());
  EXPECT_TRUE(training->fp32_gradients());
  EXPECT_TRUE(training->flash_attention());
  EXPECT_FALSE(training->fp8());

  proto.set_distributed_optimizer(false);
  proto.set_fp32_gradients(false);
  proto.set_flash_attention(false);
  proto.set_precision(v1::FP8);
  training = TrainingSpecFromProto(proto);
  ASSERT_TRUE(training.ok());
  EXPECT_FALSE(training->distributed_optimizer());
  EXPECT_FALSE(training->fp32_gradients());
  EXPECT_FALSE(training->flash_attention());
  EXPECT_TRUE(training->fp8());
  proto.set_precision(v1::BF16);
  EXPECT_FALSE(TrainingSpecFromProto(proto)->fp8());
}

TEST(TrainingSpecFromProtoTest, SwitchesOffAndTheRingUnlessSet) {
  v1::TrainingSpec proto;
  proto.set_global_batch_size(1024);
  proto.set_seq_len(8192);
  absl::StatusOr<TrainingSpec> training = TrainingSpecFromProto(proto);
  ASSERT_TRUE(training.ok()) << training.status();
  EXPECT_FALSE(training->fp8_param_gather());
  EXPECT_FALSE(training->tp_comm_overlap());
  EXPECT_EQ(training->cp_comm_type(), CpCommType::kP2p);
  EXPECT_EQ(training->moe_capacity_factor(), 0);
  EXPECT_EQ(training->moe_token_dispatcher(), TokenDispatcher::kAllToAll);
  EXPECT_TRUE(training->moe_grouped_gemm());

  proto.set_precision(v1::FP8);
  proto.set_fp8_param_gather(true);
  proto.set_tp_comm_overlap(true);
  proto.set_cp_comm_type(v1::CP_COMM_TYPE_ALL_GATHER);
  training = TrainingSpecFromProto(proto);
  ASSERT_TRUE(training.ok()) << training.status();
  EXPECT_TRUE(training->fp8_param_gather());
  EXPECT_TRUE(training->tp_comm_overlap());
  EXPECT_EQ(training->cp_comm_type(), CpCommType::kAllGather);
  proto.set_cp_comm_type(v1::CP_COMM_TYPE_P2P);
  EXPECT_EQ(TrainingSpecFromProto(proto)->cp_comm_type(), CpCommType::kP2p);

  proto.set_moe_capacity_factor(1.5);
  proto.set_moe_token_dispatcher(v1::MOE_TOKEN_DISPATCHER_ALLGATHER);
  proto.set_moe_grouped_gemm(false);
  training = TrainingSpecFromProto(proto);
  ASSERT_TRUE(training.ok()) << training.status();
  EXPECT_EQ(training->moe_capacity_factor(), 1.5);
  EXPECT_EQ(training->moe_token_dispatcher(), TokenDispatcher::kAllGather);
  EXPECT_FALSE(training->moe_grouped_gemm());

  proto.set_moe_capacity_factor(0);  // DeepEP does not pad to capacity
  proto.set_moe_token_dispatcher(v1::MOE_TOKEN_DISPATCHER_FLEX_DEEPEP);
  EXPECT_EQ(TrainingSpecFromProto(proto)->moe_token_dispatcher(), TokenDispatcher::kFlexDeepEp);
  proto.set_moe_token_dispatcher(v1::MOE_TOKEN_DISPATCHER_FLEX_HYBRIDEP);
  EXPECT_EQ(TrainingSpecFromProto(proto)->moe_token_dispatcher(), TokenDispatcher::kFlexHybridEp);
}

TEST(TrainingSpecFromProtoTest, Fp8ParamGatherNeedsFp8AndTheDistributedOptimizer) {
  v1::TrainingSpec proto;
  proto.set_global_batch_size(1024);
  proto.set_seq_len(8192);
  proto.set_fp8_param_gather(true);
  ExpectInvalid(TrainingSpecFromProto(proto).status(),
                "training.fp8_param_gather (true) needs training.precision FP8, not BF16");
  proto.set_precision(v1::FP8);
  proto.set_distributed_optimizer(false);
  ExpectInvalid(TrainingSpecFromProto(proto).status(),
                "training.fp8_param_gather (true) needs training.distributed_optimizer (false)");
}

TEST(TrainingSpecFromProtoTest, BadFieldsNameThemselves) {
  v1::TrainingSpec proto;
  proto.set_global_batch_size(1024);
  ExpectInvalid(TrainingSpecFromProto(proto).status(),
                "training.seq_len (0) must be in [1, 4194304]");
  proto.set_seq_len(8192);
  proto.set_precision(static_cast<v1::Precision>(7));
  ExpectInvalid(TrainingSpecFromProto(proto).status(), "training.precision (7)");
  proto.set_precision(v1::BF16);
  proto.set_cp_comm_type(static_cast<v1::CpCommType>(3));
  ExpectInvalid(TrainingSpecFromProto(proto).status(),
                "training.cp_comm_type (3) is not a known CpCommType");
  proto.set_cp_comm_type(v1::CP_COMM_TYPE_P2P);
  proto.set_moe_token_dispatcher(static_cast<v1::MoeTokenDispatcher>(5));
  ExpectInvalid(TrainingSpecFromProto(proto).status(),
                "training.moe_token_dispatcher (5) is not a known MoeTokenDispatcher");
  proto.set_moe_token_dispatcher(v1::MOE_TOKEN_DISPATCHER_ALLTOALL);
  proto.set_moe_capacity_factor(-2);
  ExpectInvalid(TrainingSpecFromProto(proto).status(),
                "training.moe_capacity_factor (-2) must be 0 (dropless) or in (0, 1000]");
  proto.set_moe_capacity_factor(0);
  proto.set_framework(static_cast<v1::Framework>(4));
  ExpectInvalid(TrainingSpecFromProto(proto).status(),
                "training.framework (4) is not a known Framework");
  proto.set_framework(v1::FRAMEWORK_TORCHTITAN);
  EXPECT_EQ(TrainingSpecFromProto(proto)->framework(), Framework::kTorchTitan);
  EXPECT_FALSE(TrainingSpecFromProto(proto)->torch_compile());
  proto.set_torch_compile(true);
  EXPECT_TRUE(TrainingSpecFromProto(proto)->torch_compile());
}

TEST(ClusterSpecFromProtoTest, CatalogGpuWithOverrides) {
  v1::ClusterSpec proto;
  proto.mutable_gpu()->set_type("H100-80GB");
  proto.set_num_nodes(2);
  proto.set_gpus_per_node(8);
  absl::StatusOr<ClusterSpec> cluster = ClusterSpecFromProto(proto);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  EXPECT_EQ(cluster->gpu().name, "h100-80gb");
  EXPECT_EQ(cluster->gpu().memory_bytes, 81559LL * 1024 * 1024);
  EXPECT_EQ(cluster->world_size(), 16);

  proto.mutable_gpu()->set_memory_bytes(1000);
  proto.mutable_gpu()->set_network_bandwidth_gbps(100);
  cluster = ClusterSpecFromProto(proto);
  ASSERT_TRUE(cluster.ok());
  EXPECT_EQ(cluster->gpu().memory_bytes, 1000);
  EXPECT_EQ(cluster->gpu().network_bandwidth_gbps, 100);
  EXPECT_EQ(cluster->gpu().peak_bf16_tflops, 989);  // not overridden
}

TEST(ClusterSpecFromProtoTest, UnknownTypeAndBadCounts) {
  v1::ClusterSpec proto;
  proto.mutable_gpu()->set_type("v100");
  proto.set_num_nodes(1);
  proto.set_gpus_per_node(8);
  ExpectInvalid(ClusterSpecFromProto(proto).status(),
                "cluster.gpu.type (\"v100\") is not a known GPU; known: a100-40gb");
  proto.mutable_gpu()->set_type("a100-80gb");
  proto.set_num_nodes(0);
  ExpectInvalid(ClusterSpecFromProto(proto).status(),
                "cluster.num_nodes (0) must be in [1, 65536]");
  proto.set_num_nodes(1);
  proto.mutable_gpu()->set_hbm_bandwidth_gbps(-5);
  ExpectInvalid(ClusterSpecFromProto(proto).status(), "cluster.gpu.hbm_bandwidth_gbps (-5)");
}

TEST(ClusterSpecFromProtoTest, ExplicitGpuNeedsEveryField) {
  v1::ClusterSpec proto;
  proto.set_num_nodes(1);
  proto.set_gpus_per_node(4);
  v1::GpuSpec& gpu = *proto.mutable_gpu();
  gpu.set_memory_bytes(int64_t{96} << 30);
  gpu.set_hbm_bandwidth_gbps(4000);
  gpu.set_nvlink_bandwidth_gbps(450);
  gpu.set_network_bandwidth_gbps(50);
  ExpectInvalid(ClusterSpecFromProto(proto).status(),
                "cluster.gpu.peak_bf16_tflops must be set when cluster.gpu.type is empty");
  gpu.set_peak_bf16_tflops(1000);
  absl::StatusOr<ClusterSpec> cluster = ClusterSpecFromProto(proto);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  EXPECT_EQ(cluster->gpu().name, "custom");
  EXPECT_EQ(cluster->gpu().peak_bf16_tflops, 1000);
}

class ParallelConfigFromProtoTest : public ::testing::Test {
 protected:
  ParallelConfigFromProtoTest()
      : model_(*FindModelPreset("llama3.1-8b")),
        training_(*TrainingSpec::Create({1024, 8192})),
        cluster_(*ClusterSpec::Create(*FindGpuPreset("h100-80gb"), 2, 8)) {}

  static v1::ParallelConfig Proto(int64_t dp, int64_t tp, int64_t pp, int64_t cp) {
    v1::ParallelConfig proto;
    proto.set_data_parallel(dp);
    proto.set_tensor_parallel(tp);
    proto.set_pipeline_parallel(pp);
    proto.set_context_parallel(cp);
    proto.set_micro_batch_size(1);
    return proto;
  }

  absl::StatusOr<ParallelConfig> Convert(const v1::ParallelConfig& proto) const {
    return ParallelConfigFromProto(proto, model_, training_, cluster_, PlacementRules());
  }

  ModelSpec model_;
  TrainingSpec training_;
  ClusterSpec cluster_;
};

TEST_F(ParallelConfigFromProtoTest, Defaults) {
  absl::StatusOr<ParallelConfig> config = Convert(Proto(8, 2, 1, 1));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->virtual_pipeline(), 1);
  EXPECT_TRUE(config->sequence_parallel());  // unset, tp > 1
  EXPECT_EQ(config->recompute(), Recompute::kNone);
  config = Convert(Proto(16, 1, 1, 1));
  ASSERT_TRUE(config.ok());
  EXPECT_FALSE(config->sequence_parallel());  // unset, tp = 1
}

TEST_F(ParallelConfigFromProtoTest, ExplicitFieldsAndRoundTrip) {
  v1::ParallelConfig proto = Proto(2, 2, 2, 2);
  proto.set_virtual_pipeline(2);
  proto.set_sequence_parallel(false);
  proto.set_recompute(v1::RECOMPUTE_FULL);
  proto.set_dp_sharding(v1::DP_SHARDING_FULL);
  absl::StatusOr<ParallelConfig> config = Convert(proto);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->virtual_pipeline(), 2);
  EXPECT_FALSE(config->sequence_parallel());
  EXPECT_EQ(config->recompute(), Recompute::kFull);

  const v1::ParallelConfig back = ParallelConfigToProto(*config);
  EXPECT_EQ(back.SerializeAsString(), proto.SerializeAsString());
  absl::StatusOr<ParallelConfig> again = Convert(back);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->ToString(), config->ToString());

  proto.set_recompute(v1::RECOMPUTE_SELECTIVE);
  EXPECT_EQ(Convert(proto)->recompute(), Recompute::kSelective);
  proto.set_recompute(v1::RECOMPUTE_UNSPECIFIED);
  EXPECT_EQ(Convert(proto)->recompute(), Recompute::kNone);
  EXPECT_EQ(ParallelConfigToProto(*Convert(proto)).recompute(), v1::RECOMPUTE_NONE);
}

TEST_F(ParallelConfigFromProtoTest, ExpertSizesUnsetAreTheDefaultsAndRoundTrip) {
  // A configuration stored before expert parallelism: ep 1, etp that of tp.
  v1::ParallelConfig proto = Proto(8, 2, 1, 1);
  absl::StatusOr<ParallelDims> dims = ParallelDimsFromProto(proto, training_);
  ASSERT_TRUE(dims.ok());
  EXPECT_EQ(dims->ep, 1);
  EXPECT_EQ(dims->etp, 0);
  absl::StatusOr<ParallelConfig> config = Convert(proto);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->ep(), 1);
  EXPECT_EQ(config->etp(), 2);
  // Written back without them, as before.
  v1::ParallelConfig back = ParallelConfigToProto(*config);
  EXPECT_FALSE(back.expert_parallel() != 0 || back.expert_tensor_parallel() != 0);
  proto.set_expert_parallel(1);
  EXPECT_EQ(ParallelDimsFromProto(proto, training_)->ep, 1);

  // Set, they are carried both ways (a mixture-of-experts configuration, taken as given).
  proto.set_expert_parallel(8);
  proto.set_expert_tensor_parallel(1);
  dims = ParallelDimsFromProto(proto, training_);
  ASSERT_TRUE(dims.ok());
  EXPECT_EQ(dims->ep, 8);
  EXPECT_EQ(dims->etp, 1);
  back = ParallelConfigToProto(ParallelConfig::FromCheckedDims(*dims));
  EXPECT_EQ(back.expert_parallel(), 8);
  EXPECT_EQ(back.expert_tensor_parallel(), 1);
}

TEST_F(ParallelConfigFromProtoTest, ShardingUnsetIsTheTrainingsDefaultAndIsWrittenBack) {
  // Stored before sharding was a dimension: the distributed optimizer, or none where the
  // training turned it off; written back always, since an unset mode depends on the training.
  v1::ParallelConfig proto = Proto(8, 2, 1, 1);
  absl::StatusOr<ParallelConfig> config = Convert(proto);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->dp_sharding(), DataParallelSharding::kOptimizer);
  EXPECT_EQ(ParallelConfigToProto(*config).dp_sharding(), v1::DP_SHARDING_OPTIMIZER);
  TrainingOptions options = training_.options();
  options.distributed_optimizer = false;
  const TrainingSpec plain = *TrainingSpec::Create(options);
  EXPECT_EQ(ParallelDimsFromProto(proto, plain)->dp_sharding, DataParallelSharding::kNone);
  options = training_.options();
  options.framework = Framework::kTorchTitan;
  EXPECT_EQ(ParallelDimsFromProto(proto, *TrainingSpec::Create(options))->dp_sharding,
            DataParallelSharding::kFull);

  proto.set_dp_sharding(v1::DP_SHARDING_GRADIENTS);
  proto.set_dp_shard_group(4);
  config = Convert(proto);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->dp_sharding(), DataParallelSharding::kGradients);
  EXPECT_EQ(config->dp_shard_ranks(), 4);
  EXPECT_EQ(ParallelConfigToProto(*config).SerializeAsString(),
            [&] {
              v1::ParallelConfig expected = proto;
              expected.set_virtual_pipeline(1);
              expected.set_sequence_parallel(true);
              expected.set_recompute(v1::RECOMPUTE_NONE);
              return expected;
            }()
                .SerializeAsString());

  proto.set_dp_shard_group(3);
  ExpectInvalid(Convert(proto).status(), "config.dp_shard_group (3) must be 0");
  proto.set_dp_sharding(static_cast<v1::DataParallelSharding>(9));
  ExpectInvalid(Convert(proto).status(), "config.dp_sharding (9) is not a known");
}

TEST_F(ParallelConfigFromProtoTest, ExpertSizesOfADenseModelNameThemselves) {
  v1::ParallelConfig proto = Proto(8, 2, 1, 1);
  proto.set_expert_parallel(2);
  ExpectInvalid(Convert(proto).status(),
                "config.expert_parallel (2) > 1 needs experts to split; model.moe.num_experts is "
                "0 (a dense model)");
  proto.set_expert_parallel(-1);
  ExpectInvalid(Convert(proto).status(), "config.expert_parallel (-1) must be >= 1");
  proto.set_expert_parallel(0);
  proto.set_expert_tensor_parallel(4);
  ExpectInvalid(Convert(proto).status(),
                "config.expert_tensor_parallel (4) other than config.tensor_parallel (2)");
  proto.set_expert_tensor_parallel(2);
  EXPECT_TRUE(Convert(proto).ok());
}

TEST_F(ParallelConfigFromProtoTest, BadFieldsNameThemselves) {
  ExpectInvalid(Convert(Proto(0, 2, 1, 1)).status(), "config.data_parallel (0) must be >= 1");
  ExpectInvalid(Convert(Proto(4, 2, 1, 1)).status(), "config.data_parallel (4) x");
  v1::ParallelConfig proto = Proto(8, 2, 1, 1);
  proto.set_virtual_pipeline(-1);
  ExpectInvalid(Convert(proto).status(), "config.virtual_pipeline (-1)");
  proto = Proto(8, 2, 1, 1);
  proto.set_recompute(static_cast<v1::Recompute>(9));
  ExpectInvalid(Convert(proto).status(), "config.recompute (9)");
  ExpectInvalid(Convert(Proto(1, 16, 1, 1)).status(), "cluster.gpus_per_node (8)");
}

TEST_F(ParallelConfigFromProtoTest, TpCommOverlapNeedsSequenceParallelismWithTp) {
  TrainingOptions options = training_.options();
  options.tp_comm_overlap = true;
  const TrainingSpec overlapped = *TrainingSpec::Create(options);
  v1::ParallelConfig proto = Proto(8, 2, 1, 1);
  proto.set_sequence_parallel(false);
  ExpectInvalid(
      ParallelConfigFromProto(proto, model_, overlapped, cluster_, PlacementRules()).status(),
      "training.tp_comm_overlap (true) needs config.sequence_parallel (false) with "
      "config.tensor_parallel (2) > 1");
  EXPECT_TRUE(Convert(proto).ok());  // without the overlap
  proto.clear_sequence_parallel();   // unset: on with tp > 1
  EXPECT_TRUE(ParallelConfigFromProto(proto, model_, overlapped, cluster_, PlacementRules()).ok());
  // Nothing to overlap at tp = 1, where Megatron-LM turns sequence parallelism off.
  EXPECT_TRUE(
      ParallelConfigFromProto(Proto(16, 1, 1, 1), model_, overlapped, cluster_, PlacementRules())
          .ok());
}

TEST_F(ParallelConfigFromProtoTest, DimsAreTakenAsGivenWithoutTheRules) {
  v1::ParallelConfig proto = Proto(4, 16, 1, 1);  // breaks the rules on 16 GPUs
  proto.set_micro_batch_size(3);
  absl::StatusOr<ParallelDims> dims = ParallelDimsFromProto(proto, training_);
  ASSERT_TRUE(dims.ok()) << dims.status();
  EXPECT_EQ(dims->dp, 4);
  EXPECT_EQ(dims->tp, 16);
  EXPECT_EQ(dims->micro_batch, 3);
  EXPECT_EQ(dims->virtual_pipeline, 1);
  EXPECT_TRUE(dims->sequence_parallel);
  proto.set_recompute(static_cast<v1::Recompute>(9));
  ExpectInvalid(ParallelDimsFromProto(proto, training_).status(), "config.recompute (9)");
}

TEST(PlanOptionsFromProtoTest, DefaultsAndFields) {
  v1::SearchSpace proto;
  absl::StatusOr<PlanOptions> options = PlanOptionsFromProto(proto);
  ASSERT_TRUE(options.ok());
  EXPECT_TRUE(options->micro_batch_sizes.empty());
  EXPECT_DOUBLE_EQ(options->memory.safe_fraction, 0.80);
  EXPECT_FALSE(options->rules.allow_tp_cp_across_nodes);
  // MEASURE_RISKY is the default memory policy.
  EXPECT_TRUE(options->include_risky);

  proto.add_micro_batch_sizes(1);
  proto.add_micro_batch_sizes(4);
  proto.set_safe_memory_fraction(0.9);
  proto.set_allow_tp_cp_across_nodes(true);
  proto.set_memory_policy(v1::SAFE_ONLY);
  options = PlanOptionsFromProto(proto);
  ASSERT_TRUE(options.ok());
  EXPECT_EQ(options->micro_batch_sizes, (std::vector<int64_t>{1, 4}));
  EXPECT_DOUBLE_EQ(options->memory.safe_fraction, 0.9);
  EXPECT_TRUE(options->rules.allow_tp_cp_across_nodes);
  EXPECT_FALSE(options->include_risky);
  proto.set_safe_memory_fraction(1.0);
  EXPECT_TRUE(PlanOptionsFromProto(proto).ok());
}

TEST(PlanOptionsFromProtoTest, ExpertSizeLists) {
  v1::SearchSpace proto;
  absl::StatusOr<PlanOptions> options = PlanOptionsFromProto(proto);
  ASSERT_TRUE(options.ok());
  EXPECT_TRUE(options->expert_parallel_sizes.empty());
  EXPECT_TRUE(options->expert_tensor_parallel_sizes.empty());
  proto.add_expert_parallel_sizes(8);
  proto.add_expert_parallel_sizes(4);
  proto.add_expert_tensor_parallel_sizes(1);
  options = PlanOptionsFromProto(proto);
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->expert_parallel_sizes, (std::vector<int64_t>{8, 4}));
  EXPECT_EQ(options->expert_tensor_parallel_sizes, (std::vector<int64_t>{1}));

  proto.clear_expert_parallel_sizes();
  for (int i = 1; i <= 17; ++i) proto.add_expert_parallel_sizes(i);
  ExpectInvalid(PlanOptionsFromProto(proto).status(),
                "space.expert_parallel_sizes has 17 entries; at most 16");
}

TEST(PlanOptionsFromProtoTest, ShardingModesAndGroups) {
  v1::SearchSpace proto;
  absl::StatusOr<PlanOptions> options = PlanOptionsFromProto(proto);
  ASSERT_TRUE(options.ok());
  EXPECT_TRUE(options->dp_sharding_modes.empty());
  EXPECT_TRUE(options->dp_shard_groups.empty());
  proto.add_dp_sharding_modes(v1::DP_SHARDING_FULL);
  proto.add_dp_sharding_modes(v1::DP_SHARDING_NONE);
  proto.add_dp_shard_groups(8);
  options = PlanOptionsFromProto(proto);
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->dp_sharding_modes,
            (std::vector<DataParallelSharding>{DataParallelSharding::kFull,
                                               DataParallelSharding::kNone}));
  EXPECT_EQ(options->dp_shard_groups, (std::vector<int64_t>{8}));
  proto.add_dp_sharding_modes(v1::DP_SHARDING_UNSPECIFIED);
  ExpectInvalid(PlanOptionsFromProto(proto).status(),
                "space.dp_sharding_modes[2] (DP_SHARDING_UNSPECIFIED) names no mode");
  proto.clear_dp_sharding_modes();
  for (int i = 0; i < 5; ++i) proto.add_dp_sharding_modes(v1::DP_SHARDING_FULL);
  ExpectInvalid(PlanOptionsFromProto(proto).status(),
                "space.dp_sharding_modes has 5 entries; at most 4");
}

TEST(PlanOptionsFromProtoTest, MemoryPolicyAndItsOlderFormMustAgree) {
  v1::SearchSpace proto;
  proto.set_include_risky(true);
  EXPECT_TRUE(PlanOptionsFromProto(proto)->include_risky);
  proto.set_memory_policy(v1::SAFE_ONLY);
  EXPECT_EQ(
      PlanOptionsFromProto(proto).status(),
      FieldError("space.include_risky",
                 "(true) asks for RISKY configurations, which space.memory_policy (SAFE_ONLY) "
                 "excludes"));
  proto.set_memory_policy(static_cast<v1::MemoryPolicy>(7));
  EXPECT_EQ(PlanOptionsFromProto(proto).status(),
            FieldError("space.memory_policy", "(7) is not a MemoryPolicy"));
}

TEST(PlanOptionsFromProtoTest, BadFieldsNameThemselves) {
  v1::SearchSpace proto;
  proto.add_micro_batch_sizes(2);
  proto.add_micro_batch_sizes(0);
  ExpectInvalid(PlanOptionsFromProto(proto).status(),
                "space.micro_batch_sizes[1] (0) must be in [1, 1024]");
  proto.set_micro_batch_sizes(1, 1025);
  ExpectInvalid(PlanOptionsFromProto(proto).status(), "space.micro_batch_sizes[1] (1025)");

  proto.clear_micro_batch_sizes();
  for (int i = 1; i <= 17; ++i) proto.add_micro_batch_sizes(i);
  ExpectInvalid(PlanOptionsFromProto(proto).status(),
                "space.micro_batch_sizes has 17 entries; at most 16");

  proto.clear_micro_batch_sizes();
  proto.set_safe_memory_fraction(1.5);
  ExpectInvalid(PlanOptionsFromProto(proto).status(),
                "space.safe_memory_fraction (1.5) must be in (0, 1]");
  proto.set_safe_memory_fraction(-0.1);
  ExpectInvalid(PlanOptionsFromProto(proto).status(), "space.safe_memory_fraction (-0.1)");
}

TEST(ResolveSearchSpecTest, ChecksTheExpertListsAgainstTheModel) {
  v1::SearchSpec proto;
  proto.mutable_model()->set_preset("mixtral-8x7b");
  proto.mutable_training()->set_global_batch_size(1024);
  proto.mutable_training()->set_seq_len(8192);
  proto.mutable_cluster()->mutable_gpu()->set_type("h100-80gb");
  proto.mutable_cluster()->set_num_nodes(2);
  proto.mutable_cluster()->set_gpus_per_node(8);
  proto.mutable_space()->add_expert_parallel_sizes(8);
  proto.mutable_space()->add_expert_tensor_parallel_sizes(1);
  absl::StatusOr<ResolvedSpec> spec = ResolveSearchSpec(proto);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->plan_options.expert_parallel_sizes, (std::vector<int64_t>{8}));
  EXPECT_EQ(spec->plan_options.expert_tensor_parallel_sizes, (std::vector<int64_t>{1}));

  proto.mutable_space()->add_expert_parallel_sizes(0);
  EXPECT_EQ(ResolveSearchSpec(proto).status(),
            FieldError("space.expert_parallel_sizes[1]", "(0) must be in [1, 4096]"));
  proto.mutable_space()->clear_expert_parallel_sizes();
  proto.mutable_space()->add_expert_tensor_parallel_sizes(4097);
  EXPECT_EQ(ResolveSearchSpec(proto).status(),
            FieldError("space.expert_tensor_parallel_sizes[1]", "(4097) must be in [1, 4096]"));

  // A dense model refuses either list.
  proto.mutable_model()->set_preset("llama3.1-8b");
  EXPECT_EQ(ResolveSearchSpec(proto).status(),
            FieldError("space.expert_tensor_parallel_sizes",
                       "is set, but model \"llama3.1-8b\" has no experts "
                       "(model.moe.num_experts is 0)"));
}

TEST(ResolveSearchSpecTest, ResolvesEveryPartOrNamesTheBadField) {
  v1::SearchSpec proto;
  proto.mutable_model()->set_preset("llama3.1-8b");
  proto.mutable_training()->set_global_batch_size(1024);
  proto.mutable_training()->set_seq_len(8192);
  proto.mutable_cluster()->mutable_gpu()->set_type("h100-80gb");
  proto.mutable_cluster()->set_num_nodes(2);
  proto.mutable_cluster()->set_gpus_per_node(8);
  proto.mutable_space()->add_micro_batch_sizes(2);
  absl::StatusOr<ResolvedSpec> spec = ResolveSearchSpec(proto);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->model.name(), "llama3.1-8b");
  EXPECT_EQ(spec->training.seq_len(), 8192);
  EXPECT_EQ(spec->cluster.world_size(), 16);
  EXPECT_EQ(spec->plan_options.micro_batch_sizes, (std::vector<int64_t>{2}));

  proto.mutable_cluster()->set_gpus_per_node(0);
  ExpectInvalid(ResolveSearchSpec(proto).status(), "cluster.gpus_per_node (0)");
  proto.mutable_cluster()->set_gpus_per_node(8);
  proto.mutable_model()->set_preset("gpt5");
  ExpectInvalid(ResolveSearchSpec(proto).status(), "model.preset (\"gpt5\")");
}

TEST(ResolveSearchSpecTest, Fp8NeedsHopperClassGpus) {
  v1::SearchSpec proto;
  proto.mutable_model()->set_preset("llama3.1-8b");
  proto.mutable_training()->set_global_batch_size(1024);
  proto.mutable_training()->set_seq_len(8192);
  proto.mutable_training()->set_precision(v1::FP8);
  proto.mutable_cluster()->mutable_gpu()->set_type("h100-80gb");
  proto.mutable_cluster()->set_num_nodes(2);
  proto.mutable_cluster()->set_gpus_per_node(8);
  EXPECT_TRUE(ResolveSearchSpec(proto).ok());
  proto.mutable_cluster()->mutable_gpu()->set_type("a100-80gb");
  ExpectInvalid(ResolveSearchSpec(proto).status(),
                "training.precision (FP8) needs fp8 tensor cores (compute capability 8.9 or "
                "later), and cluster.gpu.type (\"a100-80gb\") is an Ampere GPU without them");
  v1::ParallelConfig config;
  config.set_data_parallel(16);
  ExpectInvalid(
      ResolveConfiguration(proto.model(), proto.training(), proto.cluster(), config).status(),
      "training.precision (FP8) needs fp8 tensor cores");
}

TEST(ResolveConfigurationTest, MixtureOfExpertsConfigurationResolves) {
  v1::SearchSpec proto;
  proto.mutable_model()->set_preset("llama4-scout");
  proto.mutable_training()->set_global_batch_size(1024);
  proto.mutable_training()->set_seq_len(8192);
  proto.mutable_cluster()->mutable_gpu()->set_type("h100-80gb");
  proto.mutable_cluster()->set_num_nodes(2);
  proto.mutable_cluster()->set_gpus_per_node(8);
  EXPECT_TRUE(ResolveSearchSpec(proto).ok());
  v1::ParallelConfig config;
  config.set_data_parallel(16);
  config.set_tensor_parallel(1);
  config.set_pipeline_parallel(1);
  config.set_context_parallel(1);
  config.set_micro_batch_size(1);
  config.set_expert_parallel(16);
  absl::StatusOr<ResolvedConfiguration> resolved =
      ResolveConfiguration(proto.model(), proto.training(), proto.cluster(), config);
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  EXPECT_EQ(resolved->config.ep(), 16);
  // 16 experts over ep 32 do not.
  config.set_expert_parallel(32);
  EXPECT_EQ(ResolveConfiguration(proto.model(), proto.training(), proto.cluster(), config)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace paratune
