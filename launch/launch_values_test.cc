#include "launch/launch_values.h"

#include <algorithm>
#include <iterator>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "convert/spec_convert.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "launch/test_assignments.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;

v1::ProbeAssignment GangAssignment() { return TwoNodeGangAssignment(v1::RECOMPUTE_SELECTIVE); }

// The values of a launch of full steps, or of `micro_batches_per_step` when set.
absl::StatusOr<LaunchValues> Values(const v1::ProbeAssignment& assignment,
                                    int64_t micro_batches_per_step = 0) {
  return ProbeLaunchValues(assignment, micro_batches_per_step, /*extra_warmup_iterations=*/2,
                           29511);
}

std::string Get(const LaunchValues& values, const char* name) {
  absl::StatusOr<std::string> value = values.Get(name);
  return value.ok() ? *value : value.status().ToString();
}

TEST(LaunchValuesTest, EveryPlaceholderHasAValueForAGangMember) {
  // Fully sharded, so that TorchTitan, which has no optimizer-only sharding, runs it too.
  v1::ProbeAssignment assignment = GangAssignment();
  assignment.mutable_config()->set_dp_sharding(v1::DP_SHARDING_FULL);
  absl::StatusOr<LaunchValues> values = Values(assignment);
  ASSERT_TRUE(values.ok()) << values.status();
  const std::pair<const char*, const char*> expected[] = {
      {"tp", "4"},
      {"pp", "2"},
      {"cp", "1"},
      {"dp", "2"},
      {"mbs", "1"},
      {"gbs", "64"},
      {"replica_batch", "32"},
      {"seq_len", "8192"},
      {"vp", "2"},
      {"layers_per_virtual_stage", "20"},
      {"uneven_pipeline", "false"},
      {"recompute", "selective"},
      {"sequence_parallel", "true"},
      {"num_layers", "80"},
      {"hidden_size", "8192"},
      {"ffn_hidden_size", "28672"},
      {"num_attention_heads", "64"},
      {"num_kv_heads", "8"},
      {"vocab_size", "128256"},
      {"tied_embeddings", "false"},
      {"kv_channels", "0"},
      {"moe", "false"},
      {"num_experts", "0"},
      {"moe_router_topk", "0"},
      {"moe_ffn_hidden_size", "0"},
      {"moe_shared_expert_size", "0"},
      {"moe_layer_pattern",
       "0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,"
       "0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,"
       "0,0,0,0,0,0,0,0,0,0,0,0,0,0"},
      {"moe_dense_layers", "false"},
      {"moe_router_score", "softmax"},
      {"moe_router_pre_softmax", "false"},
      {"moe_grouped_gemm", "false"},  // no experts to group
      {"moe_token_dispatcher", "alltoall"},
      {"moe_flex_dispatcher_backend", "none"},
      {"moe_capacity_factor", "0"},
      {"moe_expert_parallel_overlap", "false"},
      {"moe_shared_expert_overlap", "false"},
      {"ep", "1"},
      {"etp", "4"},
      {"fp8", "false"},
      {"distributed_optimizer", "false"},
      {"dp_sharding", "full"},
      {"dp_shard", "2"},
      {"dp_replicate", "1"},
      {"distributed_optimizer_instances", "1"},
      {"cuda_device_max_connections", "8"},  // Megatron-FSDP
      {"fp32_gradients", "true"},
      {"fp8_param_gather", "false"},
      {"tp_comm_overlap", "false"},
      {"cp_comm_type", "p2p"},
      {"torch_compile", "false"},
      {"torchtitan_flavor", "70B"},
      {"probe", "true"},
      {"train_iters", "9"},
      {"nnodes", "2"},
      {"node_rank", "1"},
      {"nproc_per_node", "8"},
      {"world_size", "16"},
      {"master_addr", "gpu-node-0"},
      {"master_port", "29511"},
      {"gpu_ids", "0,1,2,3,4,5,6,7"},
      {"probe_name", "searches/3/candidates/5/probes/1"},
  };
  ASSERT_EQ(std::size(expected), LaunchPlaceholders().size());
  for (const auto& [name, value] : expected) {
    EXPECT_EQ(Get(*values, name), value) << name;
    EXPECT_NE(FindPlaceholder(name), nullptr) << name;
    EXPECT_TRUE(CheckPlaceholderValue(*FindPlaceholder(name), value).ok()) << name;
  }
}

// GangAssignment() (dp 2) as a replica-scope probe on its first node: one data-parallel rank.
v1::ProbeAssignment ReplicaAssignment(v1::DataParallelSharding sharding) {
  v1::ProbeAssignment assignment = GangAssignment();
  assignment.mutable_config()->set_dp_sharding(sharding);
  assignment.set_scope(v1::PROBE_SCOPE_REPLICA);
  assignment.set_num_ranks(8);
  assignment.mutable_gang()->RemoveLast();
  assignment.set_gang_index(0);
  return assignment;
}

TEST(LaunchValuesTest, AReplicaProbeRunsFewerReplicasWithTheSameMicroBatchesPerStep) {
  absl::StatusOr<LaunchValues> values = Values(ReplicaAssignment(v1::DP_SHARDING_NONE));
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_EQ(Get(*values, "dp"), "1");
  EXPECT_EQ(Get(*values, "gbs"), "32");  // 32 micro-batches of 1 per step, as with dp 2
  EXPECT_EQ(Get(*values, "nnodes"), "1");
  EXPECT_EQ(Get(*values, "world_size"), "8");
  EXPECT_EQ(Get(*values, "dp_shard"), "1");
  EXPECT_EQ(Get(*values, "dp_replicate"), "1");
}

TEST(LaunchValuesTest, AProbeHoldsWholeShardGroupsOfAShardedConfiguration) {
  // Sharded over both data-parallel ranks: one of them would shard over fewer.
  for (v1::DataParallelSharding sharding :
       {v1::DP_SHARDING_UNSPECIFIED, v1::DP_SHARDING_OPTIMIZER, v1::DP_SHARDING_FULL}) {
    const absl::StatusOr<LaunchValues> values = Values(ReplicaAssignment(sharding));
    EXPECT_EQ(values.status().code(), absl::StatusCode::kInvalidArgument) << sharding;
    EXPECT_THAT(values.status().message(),
                HasSubstr("assignment.num_ranks (8) runs 1 data-parallel ranks, not whole shard "
                          "groups of 2 (config.dp_sharding "))
        << sharding;
  }
  // Hybrid groups of one rank: the replica holds a whole group, sharded as the configuration.
  v1::ProbeAssignment hybrid = ReplicaAssignment(v1::DP_SHARDING_FULL);
  hybrid.mutable_config()->set_dp_shard_group(1);
  absl::StatusOr<LaunchValues> values = Values(hybrid);
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_EQ(Get(*values, "dp_shard"), "1");
  EXPECT_EQ(Get(*values, "dp_replicate"), "1");
  // The whole configuration: both ranks in one group.
  values = Values(GangAssignment());
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_EQ(Get(*values, "dp_shard"), "2");
  EXPECT_EQ(Get(*values, "dp_replicate"), "1");
}

TEST(LaunchValuesTest, AShortStepLaunchHasItsCountOfMicroBatchesPerReplica) {
  absl::StatusOr<LaunchValues> values = Values(GangAssignment(), /*micro_batches_per_step=*/4);
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_EQ(Get(*values, "gbs"), "8");  // 4 micro-batches of 1 on each of 2 replicas
  EXPECT_EQ(Get(*values, "replica_batch"), "4");
  EXPECT_EQ(Get(*values, "train_iters"), "9");
}

TEST(LaunchValuesTest, AnUnevenSplitCountsTheEmbeddingAndTheLoss) {
  v1::ProbeAssignment assignment = GangAssignment();
  assignment.mutable_model()->set_preset("llama3.1-405b");  // 126 layers
  assignment.mutable_cluster()->set_num_nodes(16);
  assignment.set_scope(v1::PROBE_SCOPE_REPLICA);
  v1::ParallelConfig& config = *assignment.mutable_config();
  config.set_data_parallel(8);
  config.set_tensor_parallel(8);
  config.set_pipeline_parallel(2);
  config.set_virtual_pipeline(1);
  // Unsharded, so that one replica is a launch of its own (a sharded one needs all 8).
  config.set_dp_sharding(v1::DP_SHARDING_NONE);
  assignment.set_num_ranks(16);
  absl::StatusOr<LaunchValues> values = Values(assignment);
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_EQ(Get(*values, "uneven_pipeline"), "false");  // 126 = 2 x 63
  config.set_pipeline_parallel(4);
  config.set_data_parallel(4);
  assignment.set_num_ranks(32);
  assignment.mutable_gang(0)->set_num_ranks(16);
  assignment.mutable_gang(1)->set_first_rank(16);
  assignment.mutable_gang(1)->set_num_ranks(16);
  for (int g = 8; g < 16; ++g) assignment.add_gpu_indices(g);
  values = Values(assignment);
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_EQ(Get(*values, "uneven_pipeline"), "true");  // 126 + 2 = 4 x 32
  EXPECT_EQ(Get(*values, "layers_per_virtual_stage"), "32");
  config.set_virtual_pipeline(2);
  values = Values(assignment);
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_EQ(Get(*values, "layers_per_virtual_stage"), "16");
}

TEST(LaunchValuesTest, AnExportIsTheWholeConfigurationWithoutAProbesOwnValues) {
  const v1::ProbeAssignment assignment = GangAssignment();
  absl::StatusOr<LaunchValues> exported = ExportLaunchValues(assignment);
  ASSERT_TRUE(exported.ok()) << exported.status();
  absl::StatusOr<LaunchValues> probed = Values(assignment);
  ASSERT_TRUE(probed.ok()) << probed.status();
  const char* const per_probe[] = {"train_iters", "node_rank", "master_addr",
                                   "master_port", "gpu_ids",   "probe_name"};
  for (const Placeholder& placeholder : LaunchPlaceholders()) {
    const std::string name = placeholder.name;
    if (name == "probe") continue;
    if (std::find(std::begin(per_probe), std::end(per_probe), name) != std::end(per_probe)) {
      absl::StatusOr<std::string> value = exported->Get(name);
      EXPECT_EQ(value.status().code(), absl::StatusCode::kFailedPrecondition) << name;
      EXPECT_THAT(value.status().message(),
                  HasSubstr(absl::StrCat("{", name, "} has no value in an export")));
      continue;
    }
    // A full-scope probe of full steps on one worker per node launches what an export does.
    EXPECT_EQ(Get(*exported, placeholder.name), Get(*probed, placeholder.name)) << name;
  }
  EXPECT_EQ(Get(*exported, "probe"), "false");
  EXPECT_EQ(Get(*exported, "gbs"), "64");
  EXPECT_EQ(Get(*exported, "nnodes"), "2");
  EXPECT_EQ(Get(*exported, "nproc_per_node"), "8");
  EXPECT_EQ(exported->Get("tpp").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(LaunchValuesTest, TheTrainingSwitchesAreTheSearchsAndTpOverlapNeedsSequenceParallelism) {
  v1::ProbeAssignment assignment = GangAssignment();  // tp 4 with sequence parallelism
  v1::TrainingSpec& training = *assignment.mutable_training();
  training.set_precision(v1::FP8);
  training.set_fp8_param_gather(true);
  training.set_tp_comm_overlap(true);
  training.set_cp_comm_type(v1::CP_COMM_TYPE_ALL_GATHER);
  absl::StatusOr<LaunchValues> values = Values(assignment);
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_EQ(Get(*values, "fp8_param_gather"), "true");
  EXPECT_EQ(Get(*values, "tp_comm_overlap"), "true");
  EXPECT_EQ(Get(*values, "cp_comm_type"), "all_gather");
  // At tp 1 Megatron-LM turns sequence parallelism off and would reject the overlap.
  v1::ParallelConfig& config = *assignment.mutable_config();
  config.set_data_parallel(8);
  config.set_tensor_parallel(1);
  values = Values(assignment);
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_EQ(Get(*values, "sequence_parallel"), "false");
  EXPECT_EQ(Get(*values, "tp_comm_overlap"), "false");
}

TEST(LaunchValuesTest, ShardedGradientsTakeMoreThanOneConnectionAndHybridGroupsReplicate) {
  v1::ProbeAssignment assignment = GangAssignment();  // dp 2
  v1::ParallelConfig& config = *assignment.mutable_config();
  for (const auto& [sharding, connections] :
       {std::pair<v1::DataParallelSharding, const char*>{v1::DP_SHARDING_NONE, "1"},
        {v1::DP_SHARDING_OPTIMIZER, "1"},
        {v1::DP_SHARDING_GRADIENTS, "8"},
        {v1::DP_SHARDING_FULL, "8"}}) {
    config.set_dp_sharding(sharding);
    absl::StatusOr<LaunchValues> values = ExportLaunchValues(assignment);
    ASSERT_TRUE(values.ok()) << values.status();
    EXPECT_EQ(Get(*values, "cuda_device_max_connections"), connections) << sharding;
    EXPECT_EQ(Get(*values, "distributed_optimizer"),
              sharding == v1::DP_SHARDING_OPTIMIZER ? "true" : "false")
        << sharding;
  }
  // Full sharding within groups of one rank of the two: two replicas of the group.
  config.set_dp_shard_group(1);
  absl::StatusOr<LaunchValues> values = ExportLaunchValues(assignment);
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_EQ(Get(*values, "dp_sharding"), "full");
  EXPECT_EQ(Get(*values, "dp_shard"), "1");
  EXPECT_EQ(Get(*values, "dp_replicate"), "2");
  EXPECT_EQ(Get(*values, "distributed_optimizer_instances"), "2");
  // Without sharding every rank is a replica, and there is one optimizer (not distributed).
  config.set_dp_shard_group(0);
  config.set_dp_sharding(v1::DP_SHARDING_NONE);
  values = ExportLaunchValues(assignment);
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_EQ(Get(*values, "dp_replicate"), "2");
  EXPECT_EQ(Get(*values, "distributed_optimizer_instances"), "1");
}

TEST(LaunchValuesTest, TheTorchTitanFlavorHasNoValueWhereTorchTitanCannotRunTheProbe) {
  v1::ProbeAssignment assignment = GangAssignment();
  assignment.mutable_training()->set_fp32_gradients(false);
  absl::StatusOr<LaunchValues> values = Values(assignment);
  ASSERT_TRUE(values.ok()) << values.status();
  const absl::StatusOr<std::string> flavor = values->Get("torchtitan_flavor");
  EXPECT_EQ(flavor.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(flavor.status().message(),
              HasSubstr("{torchtitan_flavor} has no value: training.fp32_gradients (false)"));
}

TEST(LaunchValuesTest, AnExportedUnevenInterleavedSplitCountsTheEmbeddingAndTheLoss) {
  v1::ProbeAssignment assignment = GangAssignment();
  assignment.mutable_model()->set_preset("llama3.1-405b");  // 126 layers
  assignment.mutable_training()->set_global_batch_size(2048);
  assignment.mutable_cluster()->set_num_nodes(16);
  v1::ParallelConfig& config = *assignment.mutable_config();
  config.set_data_parallel(2);
  config.set_tensor_parallel(8);
  config.set_pipeline_parallel(8);
  config.set_virtual_pipeline(2);
  absl::StatusOr<LaunchValues> values = ExportLaunchValues(assignment);
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_EQ(Get(*values, "uneven_pipeline"), "true");
  EXPECT_EQ(Get(*values, "layers_per_virtual_stage"), "8");  // (126 + 2) / (8 x 2)
  EXPECT_EQ(Get(*values, "world_size"), "128");
}

TEST(LaunchValuesTest, AnExportOfAnotherClusterIsRejected) {
  v1::ProbeAssignment assignment = GangAssignment();
  absl::StatusOr<ModelSpec> model = ModelSpecFromProto(assignment.model());
  absl::StatusOr<TrainingSpec> training = TrainingSpecFromProto(assignment.training());
  absl::StatusOr<ClusterSpec> cluster = ClusterSpecFromProto(assignment.cluster());
  assignment.mutable_cluster()->set_num_nodes(4);
  absl::StatusOr<ClusterSpec> larger = ClusterSpecFromProto(assignment.cluster());
  ASSERT_TRUE(model.ok() && training.ok() && cluster.ok() && larger.ok());
  absl::StatusOr<ParallelConfig> config =
      ParallelConfigFromProto(assignment.config(), *model, *training, *cluster, PlacementRules());
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(LaunchValues::ForExport(*model, *training, *larger, *config).status(),
            absl::InvalidArgumentError("config (dp2 tp4 pp2 cp1 mbs1 vp2 recompute=selective) "
                                       "uses 16 GPUs, not the cluster's 4 x 8"));
}

TEST(LaunchValuesTest, ABadGangIsRejectedNamingTheField) {
  const struct {
    void (*change)(v1::ProbeAssignment&);
    const char* error;
  } cases[] = {
      {[](v1::ProbeAssignment& a) { a.clear_gang(); },
       "assignment.gang (empty) must list the workers running the probe"},
      {[](v1::ProbeAssignment& a) { a.set_num_ranks(12); },
       "assignment.num_ranks (12) must be a number of tp x pp x cp (8) replicas"},
      {[](v1::ProbeAssignment& a) { a.set_num_ranks(8); },
       "assignment.num_ranks (8) of a full-scope probe must be the 16 GPUs"},
      {[](v1::ProbeAssignment& a) { a.mutable_gang(1)->set_first_rank(4); },
       "assignment.gang[1] (first_rank 4, num_ranks 8) must start at rank 8"},
      {[](v1::ProbeAssignment& a) { a.set_gang_index(2); },
       "assignment.gang_index (2) must be in [0, 2)"},
      {[](v1::ProbeAssignment& a) { a.add_gpu_indices(8); },
       "assignment.gpu_indices (9 GPUs) must have one GPU per rank of this worker (8)"},
      {[](v1::ProbeAssignment& a) { a.mutable_gang(0)->set_hostname("node 0; rm -rf /"); },
       "assignment.gang[0].hostname (\"node 0; rm -rf /\") must be letters, digits"},
  };
  for (const auto& c : cases) {
    v1::ProbeAssignment assignment = GangAssignment();
    c.change(assignment);
    absl::StatusOr<LaunchValues> values = Values(assignment);
    EXPECT_EQ(values.status().code(), absl::StatusCode::kInvalidArgument) << c.error;
    EXPECT_THAT(values.status().message(), HasSubstr(c.error));
  }
}

// The configuration dp x tp x pp with expert sizes ep and etp (0: tp), sequence parallel.
ParallelDims ExpertDims(int64_t dp, int64_t tp, int64_t pp, int64_t ep, int64_t etp) {
  ParallelDims dims = MakeParallelDims(dp, tp, pp, /*cp=*/1, /*micro_batch=*/1);
  dims.ep = ep;
  dims.etp = etp;
  return dims;
}

TEST(LaunchValuesTest, AMixtureOfExpertsModelStatesItsExpertsRouterAndExpertLayout) {
  // Llama 4 Maverick: 128 experts of 8192 on layers 1, 3, ..., 47, one shared expert of 8192,
  // sigmoid top-1 routing; heads 5120 / 40 = 128 wide.
  absl::StatusOr<LaunchValues> values =
      PresetExportLaunchValues("llama4-maverick", 8, ExpertDims(8, 4, 2, 16, 1));
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_EQ(Get(*values, "moe"), "true");
  EXPECT_EQ(Get(*values, "num_experts"), "128");
  EXPECT_EQ(Get(*values, "moe_router_topk"), "1");
  EXPECT_EQ(Get(*values, "moe_ffn_hidden_size"), "8192");
  EXPECT_EQ(Get(*values, "moe_shared_expert_size"), "8192");
  std::string every_other;
  for (int layer = 0; layer < 48; ++layer) {
    absl::StrAppend(&every_other, layer == 0 ? "" : ",", layer % 2 == 1 ? "1" : "0");
  }
  EXPECT_EQ(Get(*values, "moe_layer_pattern"), every_other);
  EXPECT_EQ(Get(*values, "moe_dense_layers"), "true");
  EXPECT_EQ(Get(*values, "moe_router_score"), "sigmoid");
  EXPECT_EQ(Get(*values, "moe_router_pre_softmax"), "false");  // sigmoid scores
  EXPECT_EQ(Get(*values, "kv_channels"), "0");
  EXPECT_EQ(Get(*values, "ep"), "16");
  EXPECT_EQ(Get(*values, "etp"), "1");
  EXPECT_EQ(Get(*values, "ffn_hidden_size"), "16384");  // the dense layers' MLP
  // The training spec's routing: grouped GEMM, the all-to-all dispatcher, dropless.
  EXPECT_EQ(Get(*values, "moe_grouped_gemm"), "true");
  EXPECT_EQ(Get(*values, "moe_token_dispatcher"), "alltoall");
  EXPECT_EQ(Get(*values, "moe_capacity_factor"), "0");

  // Qwen3-30B-A3B: 128 experts of 768 on every layer, softmax top-8, no shared expert, heads
  // of 128 where h / a is 64; etp unset is tp.
  values = PresetExportLaunchValues("qwen3-30b-a3b", 2, ExpertDims(8, 1, 2, 8, 0));
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_EQ(Get(*values, "kv_channels"), "128");
  EXPECT_EQ(Get(*values, "moe_shared_expert_size"), "0");
  EXPECT_EQ(Get(*values, "moe_router_score"), "softmax");
  EXPECT_EQ(Get(*values, "moe_layer_pattern").find('0'), std::string::npos);
  EXPECT_EQ(Get(*values, "moe_layer_pattern").size(), 2u * 48 - 1);
  EXPECT_EQ(Get(*values, "moe_dense_layers"), "false");
  EXPECT_EQ(Get(*values, "etp"), "1");
  for (const Placeholder& placeholder : LaunchPlaceholders()) {
    absl::StatusOr<std::string> value = values->Get(placeholder.name);
    if (value.ok()) {
      EXPECT_TRUE(CheckPlaceholderValue(placeholder, *value).ok()) << *value;
    }
  }
}

TEST(LaunchValuesTest, TopOneSoftmaxRoutingAsksForTheSoftmaxBeforeTheTopK) {
  ModelDimensions dims = FindModelPreset("mixtral-8x7b")->dims();
  dims.moe.router_top_k = 1;
  absl::StatusOr<ModelSpec> model = ModelSpec::Create("mixtral-top1", dims);
  TrainingOptions options;
  options.global_batch_size = 64;
  options.seq_len = 4096;
  absl::StatusOr<TrainingSpec> training = TrainingSpec::Create(options);
  absl::StatusOr<ClusterSpec> cluster = ClusterSpec::Create(*FindGpuPreset("h100-80gb"), 1, 8);
  ASSERT_TRUE(model.ok() && training.ok() && cluster.ok());
  const ParallelDims parallel = ExpertDims(8, 1, 1, 8, 0);
  ASSERT_EQ(CheckRules(*model, *training, *cluster, PlacementRules(), parallel), Rejection::kValid);
  absl::StatusOr<LaunchValues> values = LaunchValues::ForExport(
      *model, *training, *cluster, ParallelConfig::FromCheckedDims(parallel));
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_EQ(Get(*values, "moe_router_pre_softmax"), "true");
}

TEST(LaunchValuesTest, ConditionValuesAreCheckedAgainstWhatThePlaceholderTakes) {
  EXPECT_TRUE(CheckPlaceholderValue(*FindPlaceholder("tp"), "8").ok());
  EXPECT_EQ(CheckPlaceholderValue(*FindPlaceholder("tp"), "eight").message(),
            "{tp} is an integer, never \"eight\"");
  EXPECT_EQ(CheckPlaceholderValue(*FindPlaceholder("recompute"), "ful").message(),
            "{recompute} is none, selective or full, never \"ful\"");
  EXPECT_EQ(CheckPlaceholderValue(*FindPlaceholder("fp8"), "yes").message(),
            "{fp8} is true or false, never \"yes\"");
  EXPECT_TRUE(CheckPlaceholderValue(*FindPlaceholder("cp_comm_type"), "all_gather").ok());
  // Megatron-LM's help spells it so; Transformer Engine takes only all_gather.
  EXPECT_EQ(CheckPlaceholderValue(*FindPlaceholder("cp_comm_type"), "allgather").message(),
            "{cp_comm_type} is p2p or all_gather, never \"allgather\"");
  EXPECT_TRUE(CheckPlaceholderValue(*FindPlaceholder("moe_router_score"), "sigmoid").ok());
  EXPECT_EQ(CheckPlaceholderValue(*FindPlaceholder("moe_router_score"), "sqrtsoftplus").message(),
            "{moe_router_score} is softmax or sigmoid, never \"sqrtsoftplus\"");
  for (const char* pattern : {"1", "0,1", "1,1,0"}) {
    EXPECT_TRUE(CheckPlaceholderValue(*FindPlaceholder("moe_layer_pattern"), pattern).ok())
        << pattern;
  }
  for (const char* pattern : {"", "2", "1,", ",1", "1,,0", "[1,0]", "10"}) {
    EXPECT_EQ(CheckPlaceholderValue(*FindPlaceholder("moe_layer_pattern"), pattern).code(),
              absl::StatusCode::kInvalidArgument)
        << pattern;
  }
  EXPECT_TRUE(CheckPlaceholderValue(*FindPlaceholder("moe_token_dispatcher"), "allgather").ok());
  EXPECT_TRUE(CheckPlaceholderValue(*FindPlaceholder("moe_token_dispatcher"), "flex").ok());
  EXPECT_EQ(CheckPlaceholderValue(*FindPlaceholder("moe_token_dispatcher"), "deepep").message(),
            "{moe_token_dispatcher} is alltoall, allgather or flex, never \"deepep\"");
  EXPECT_TRUE(
      CheckPlaceholderValue(*FindPlaceholder("moe_flex_dispatcher_backend"), "hybridep").ok());
  EXPECT_EQ(
      CheckPlaceholderValue(*FindPlaceholder("moe_flex_dispatcher_backend"), "ncclep").message(),
      "{moe_flex_dispatcher_backend} is deepep, hybridep or none, never \"ncclep\"");
  EXPECT_TRUE(CheckPlaceholderValue(*FindPlaceholder("moe_capacity_factor"), "1.25").ok());
  for (const char* factor : {"-1", "", "1e 2", "x"}) {
    EXPECT_EQ(CheckPlaceholderValue(*FindPlaceholder("moe_capacity_factor"), factor).code(),
              absl::StatusCode::kInvalidArgument)
        << factor;
  }
  EXPECT_EQ(FindPlaceholder("tpp"), nullptr);
}

}  // namespace
}  // namespace paratune
