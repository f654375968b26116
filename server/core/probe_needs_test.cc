#include "server/core/probe_needs.h"

#include "convert/search_text.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/core/launch_target.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;

v1::Worker Worker(int gpus, const std::string& type, const std::string& backend = "sim") {
  v1::Worker worker;
  worker.set_name("workers/1");
  for (int i = 0; i < gpus; ++i) {
    v1::Gpu& gpu = *worker.add_gpus();
    gpu.set_index(i);
    gpu.set_name(absl::StrCat("simulated ", type));
    gpu.set_memory_bytes(85'520'809'984);
  }
  worker.set_gpu_type(type);
  worker.add_backends(backend);
  return worker;
}

ProbeNeeds Needs(int64_t ranks, int64_t gpus_per_node) {
  ProbeNeeds needs;
  needs.probe = "searches/1/candidates/0/probes/1";
  needs.kind.backend = "sim";
  needs.kind.gpu_type = "h100-80gb";
  needs.gpus_per_node = gpus_per_node;
  needs.ranks = ranks;
  return needs;
}

TEST(WorkerMismatchTest, AWorkerOfTheTypeWithANodeOfGpusFits) {
  EXPECT_EQ(WorkerMismatch(Worker(8, "h100-80gb"), Needs(16, 8), false), "");
  // A larger worker hosts one node share.
  EXPECT_EQ(WorkerMismatch(Worker(64, "h100-80gb"), Needs(16, 8), false), "");
  // A replica smaller than a node fits a smaller worker.
  EXPECT_EQ(WorkerMismatch(Worker(4, "h100-80gb"), Needs(4, 8), false), "");
}

TEST(WorkerMismatchTest, NamesWhatDoesNotMatch) {
  EXPECT_EQ(WorkerMismatch(Worker(8, "a100-40gb"), Needs(8, 8), false),
            "its GPUs are a100-40gb, not h100-80gb");
  EXPECT_EQ(WorkerMismatch(Worker(4, "h100-80gb"), Needs(16, 8), false),
            "it has 4 GPUs, fewer than a node share of 8");
  EXPECT_EQ(WorkerMismatch(Worker(8, "h100-80gb", "replay"), Needs(8, 8), false),
            "it offers backends replay, not sim");
  v1::Worker unknown = Worker(8, "");
  unknown.mutable_gpus(0)->set_name("NVIDIA L40S");
  EXPECT_THAT(WorkerMismatch(unknown, Needs(8, 8), false),
              HasSubstr("its GPUs are unknown GPU NVIDIA L40S, not h100-80gb"));
  ProbeNeeds templated = Needs(8, 8);
  templated.kind.backend = "command";
  templated.kind.command_template = "megatron";
  EXPECT_EQ(WorkerMismatch(Worker(8, "h100-80gb", "command"), templated, false),
            "it has no launch template megatron");
}

TEST(WorkerMismatchTest, ReservationsKeepWorkersAndProbesTogether) {
  v1::Worker reserved = Worker(8, "h100-80gb");
  (*reserved.mutable_labels())[kProbeReservationLabel] = "searches/1/candidates/0/probes/1";
  EXPECT_EQ(WorkerMismatch(reserved, Needs(8, 8), true), "");
  ProbeNeeds other = Needs(8, 8);
  other.probe = "searches/1/candidates/1/probes/1";
  EXPECT_EQ(WorkerMismatch(reserved, other, false), "it is reserved for another probe");
  EXPECT_EQ(WorkerMismatch(Worker(8, "h100-80gb"), Needs(8, 8), true),
            "workers were started for this probe");
}

TEST(WorkerMismatchTest, CustomGpusMatchByMemory) {
  ProbeNeeds custom = Needs(8, 8);
  custom.kind.gpu_type = "";
  custom.kind.gpu_memory_bytes = 85'000'000'000;
  EXPECT_EQ(WorkerMismatch(Worker(8, "h100-80gb"), custom, false), "");
  custom.kind.gpu_memory_bytes = 40'000'000'000;
  EXPECT_THAT(WorkerMismatch(Worker(8, "h100-80gb"), custom, false),
              HasSubstr("not the custom GPU's 40000000000"));
}

TEST(DescribeTest, NeedsAndFleetForWaitingReasons) {
  EXPECT_EQ(DescribeNeeds(Needs(16, 8)), "2 nodes of 8 x h100-80gb (16 GPUs) with backend sim");
  EXPECT_EQ(DescribeNeeds(Needs(4, 8)), "1 node of 4 x h100-80gb with backend sim");
  const v1::Worker a = Worker(8, "a100-40gb");
  const v1::Worker b = Worker(8, "a100-40gb");
  const v1::Worker c = Worker(4, "h100-80gb");
  EXPECT_EQ(DescribeFleet({&a, &b, &c}), "2 x 8 a100-40gb (sim), 1 x 4 h100-80gb (sim)");
  EXPECT_EQ(DescribeFleet({}), "none");
}

TEST(NeedsOfTest, TakesTheSearchsClusterAndProbeSettings) {
  v1::SearchSpec spec;
  spec.mutable_cluster()->mutable_gpu()->set_type("H100-80GB");
  spec.mutable_cluster()->set_gpus_per_node(4);
  spec.mutable_probe()->set_backend("sim");
  const ProbeNeeds needs = NeedsOf(spec, "searches/1/candidates/0/probes/1", 8);
  EXPECT_EQ(needs.kind.gpu_type, "h100-80gb");
  EXPECT_EQ(needs.gpus_per_node, 4);
  EXPECT_EQ(needs.ranks, 8);
  EXPECT_EQ(needs.kind.backend, "sim");
}

TEST(ScopedNeedsOfTest, FullWhenTheFleetCouldHostEveryRankElseOneReplica) {
  v1::SearchSpec spec;
  spec.mutable_cluster()->set_num_nodes(4);
  spec.mutable_cluster()->set_gpus_per_node(8);
  v1::ParallelConfig config;
  config.set_data_parallel(4);
  config.set_tensor_parallel(2);
  config.set_pipeline_parallel(2);
  config.set_context_parallel(2);
  const std::string probe = "searches/1/candidates/0/probes/1";
  auto [full, full_needs] =
      ScopedNeedsOf(spec, config, probe, [](const ProbeNeeds& needs) { return needs.ranks == 32; });
  EXPECT_EQ(full, v1::PROBE_SCOPE_FULL);
  EXPECT_EQ(full_needs.ranks, 32);
  EXPECT_EQ(full_needs.probe, probe);
  auto [replica, replica_needs] =
      ScopedNeedsOf(spec, config, probe, [](const ProbeNeeds&) { return false; });
  EXPECT_EQ(replica, v1::PROBE_SCOPE_REPLICA);
  EXPECT_EQ(replica_needs.ranks, 8);

  // A scope the search sets wins.
  spec.mutable_probe()->set_scope(v1::PROBE_SCOPE_REPLICA);
  EXPECT_EQ(ScopedNeedsOf(spec, config, probe, [](const ProbeNeeds&) { return true; }).first,
            v1::PROBE_SCOPE_REPLICA);
}

// A command search of 4 nodes of 8 and a dp 4 x tp 2 x pp 2 x cp 2 configuration.
v1::SearchSpec CommandSpec() {
  v1::SearchSpec spec;
  spec.mutable_training()->set_global_batch_size(64);
  spec.mutable_training()->set_seq_len(2048);
  spec.mutable_cluster()->set_num_nodes(4);
  spec.mutable_cluster()->set_gpus_per_node(8);
  spec.mutable_probe()->set_backend("command");
  spec.mutable_probe()->set_command_template("megatron");
  return spec;
}

v1::ParallelConfig ShardedConfig(v1::DataParallelSharding sharding, int64_t group = 0) {
  v1::ParallelConfig config;
  config.set_data_parallel(4);
  config.set_tensor_parallel(2);
  config.set_pipeline_parallel(2);
  config.set_context_parallel(2);
  config.set_dp_sharding(sharding);
  config.set_dp_shard_group(group);
  return config;
}

constexpr char kProbe[] = "searches/1/candidates/0/probes/1";

TEST(ScopedNeedsOfTest, ACommandProbeOfAShardedConfigurationRunsEveryRank) {
  for (v1::ProbeScope setting : {v1::PROBE_SCOPE_UNSPECIFIED, v1::PROBE_SCOPE_REPLICA}) {
    v1::SearchSpec spec = CommandSpec();
    spec.mutable_probe()->set_scope(setting);
    // Even where the fleet could host no full probe: the candidate waits rather than being
    // measured as a configuration that shards over one rank.
    auto [scope, needs] = ScopedNeedsOf(spec, ShardedConfig(v1::DP_SHARDING_FULL), kProbe,
                                        [](const ProbeNeeds&) { return false; });
    EXPECT_EQ(scope, v1::PROBE_SCOPE_FULL) << setting;
    EXPECT_EQ(needs.ranks, 32);
    EXPECT_EQ(needs.shard_group.sharding, DataParallelSharding::kFull);
    EXPECT_EQ(needs.shard_group.ranks, 4);
    EXPECT_EQ(needs.shard_group.data_parallel, 4);
  }
  // Unsharded, a replica measures what the configuration's ranks hold.
  auto [scope, needs] = ScopedNeedsOf(CommandSpec(), ShardedConfig(v1::DP_SHARDING_NONE), kProbe,
                                      [](const ProbeNeeds&) { return false; });
  EXPECT_EQ(scope, v1::PROBE_SCOPE_REPLICA);
  EXPECT_EQ(needs.ranks, 8);
  EXPECT_EQ(needs.shard_group.ranks, 1);
}

TEST(ProbeShardGroupTest, TheGroupOfTheConfigurationsShardingUnderTheCommandBackend) {
  const v1::SearchSpec command = CommandSpec();
  EXPECT_EQ(ProbeShardGroup(command, ShardedConfig(v1::DP_SHARDING_OPTIMIZER)).ranks, 4);
  EXPECT_EQ(ProbeShardGroup(command, ShardedConfig(v1::DP_SHARDING_GRADIENTS)).ranks, 4);
  const ShardGroup hybrid = ProbeShardGroup(command, ShardedConfig(v1::DP_SHARDING_FULL, 2));
  EXPECT_EQ(hybrid.ranks, 2);
  EXPECT_EQ(hybrid.data_parallel, 4);
  EXPECT_EQ(ProbeShardGroup(command, ShardedConfig(v1::DP_SHARDING_NONE)).ranks, 1);
  // A stored configuration without a mode has the training's default: Megatron-LM's
  // distributed optimizer, or nothing without it.
  const ShardGroup unset = ProbeShardGroup(command, ShardedConfig(v1::DP_SHARDING_UNSPECIFIED));
  EXPECT_EQ(unset.sharding, DataParallelSharding::kOptimizer);
  EXPECT_EQ(unset.ranks, 4);
  v1::SearchSpec plain = command;
  plain.mutable_training()->set_distributed_optimizer(false);
  EXPECT_EQ(ProbeShardGroup(plain, ShardedConfig(v1::DP_SHARDING_UNSPECIFIED)).ranks, 1);
  // One data-parallel rank shards nothing.
  v1::ParallelConfig one = ShardedConfig(v1::DP_SHARDING_FULL);
  one.set_data_parallel(1);
  EXPECT_EQ(ProbeShardGroup(command, one).ranks, 1);
  // The other backends measure the configuration's shards whatever ranks they run.
  for (const char* backend : {"sim", "cuda", "replay"}) {
    v1::SearchSpec spec = command;
    spec.mutable_probe()->set_backend(backend);
    EXPECT_EQ(ProbeShardGroup(spec, ShardedConfig(v1::DP_SHARDING_FULL)).ranks, 1) << backend;
  }
}

TEST(DescribeTest, SaysWhyAShardedConfigurationNeedsEveryRank) {
  ProbeNeeds all = Needs(32, 8);
  all.shard_group = {DataParallelSharding::kOptimizer, 4, 4};
  EXPECT_EQ(DescribeNeeds(all),
            "4 nodes of 8 x h100-80gb (32 GPUs) with backend sim; every rank: its "
            "dp_sharding=optimizer shards over all 4 data-parallel ranks, and a probe of fewer "
            "would shard less");
  ProbeNeeds hybrid = Needs(32, 8);
  hybrid.shard_group = {DataParallelSharding::kFull, 2, 4};
  EXPECT_EQ(DescribeNeeds(hybrid),
            "4 nodes of 8 x h100-80gb (32 GPUs) with backend sim; every rank: its "
            "dp_sharding=full shards within groups of 2 of its 4 data-parallel ranks, and no "
            "probe runs one group alone (one replica would shard less)");
}

}  // namespace
}  // namespace paratune
