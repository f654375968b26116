#include "worker/probe/probe_spec.h"

#include <cmath>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "worker/probe/step_plan_specs.h"
#include "worker/probe/test_assignments.h"

namespace paratune {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Llama-3.2-1B (32 heads, 8 kv heads, 16 layers) on 8 GPUs: dp2 tp2 pp2 cp1.
v1::ProbeAssignment Valid() { return TestAssignment("llama3.2-1b", 16, 2048, 2, 2, 2, 1, 1); }

void ExpectInvalid(const v1::ProbeAssignment& assignment, const std::string& message) {
  absl::StatusOr<ProbeSpec> spec = ProbeSpec::FromAssignment(assignment);
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument) << spec.status();
  EXPECT_THAT(spec.status().message(), HasSubstr(message));
}

// A valid spec that paratune-probe cannot run: CheckCudaProbeRuns says why.
void ExpectNotForTheCudaProbe(const v1::ProbeAssignment& assignment, const std::string& message) {
  absl::StatusOr<ProbeSpec> spec = ProbeSpec::FromAssignment(assignment);
  ASSERT_TRUE(spec.ok()) << spec.status();
  const absl::Status runs = CheckCudaProbeRuns(*spec);
  EXPECT_EQ(runs.code(), absl::StatusCode::kInvalidArgument) << runs;
  EXPECT_THAT(runs.message(), HasSubstr(message));
}

v1::ProbeAssignment Mixtral() {
  v1::ProbeAssignment assignment = Valid();
  assignment.mutable_model()->Clear();
  assignment.mutable_model()->set_preset("mixtral-8x7b");
  return assignment;
}

TEST(ProbeSpecTest, MixtralRunsOnTheCudaProbe) {
  // Mixtral's heads are h / a wide; bf16, the dropless all-to-all dispatcher: what the probe's
  // MoE block runs.
  absl::StatusOr<ProbeSpec> spec = ProbeSpec::FromAssignment(Mixtral());
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_TRUE(CheckCudaProbeRuns(*spec).ok()) << CheckCudaProbeRuns(*spec);
}

TEST(ProbeSpecTest, SharedExpertsRunOnTheCudaProbe) {
  // Llama 4 Scout: one shared expert beside 16 routed ones, top-1, a sigmoid router.
  v1::ProbeAssignment scout = Valid();
  scout.mutable_model()->Clear();
  scout.mutable_model()->set_preset("llama4-scout");
  absl::StatusOr<ProbeSpec> spec = ProbeSpec::FromAssignment(scout);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_TRUE(CheckCudaProbeRuns(*spec).ok()) << CheckCudaProbeRuns(*spec);
  // Beside the dispatcher they do not; on a model without them the switch does nothing.
  scout.mutable_training()->set_moe_shared_expert_overlap(true);
  ExpectNotForTheCudaProbe(scout,
                           "training.moe_shared_expert_overlap (true) with "
                           "mixture-of-experts model \"llama4-scout\"");
  v1::ProbeAssignment mixtral = Mixtral();
  mixtral.mutable_training()->set_moe_shared_expert_overlap(true);
  spec = ProbeSpec::FromAssignment(mixtral);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_TRUE(CheckCudaProbeRuns(*spec).ok()) << CheckCudaProbeRuns(*spec);
}

// Full sharding runs where sharded gradients do, in bf16.
TEST(ProbeSpecTest, ShardedWeightsRunInBf16) {
  v1::ProbeAssignment assignment = Valid();
  assignment.mutable_config()->set_dp_sharding(v1::DP_SHARDING_FULL);
  absl::StatusOr<ProbeSpec> full = ProbeSpec::FromAssignment(assignment);
  ASSERT_TRUE(full.ok()) << full.status();
  EXPECT_TRUE(CheckCudaProbeRuns(*full).ok()) << CheckCudaProbeRuns(*full);
  v1::ProbeAssignment fp8 = assignment;
  fp8.mutable_training()->set_precision(v1::FP8);
  ExpectNotForTheCudaProbe(fp8, "training.precision (FP8) with config.dp_sharding (full)");
  v1::ProbeAssignment moe = Mixtral();
  moe.mutable_config()->set_dp_sharding(v1::DP_SHARDING_FULL);
  ExpectNotForTheCudaProbe(
      moe, "mixture-of-experts model \"mixtral-8x7b\" with config.dp_sharding (full)");
  v1::ProbeAssignment hybrid = TestAssignment("llama3.2-1b", 16, 2048, 4, 2, 2, 1, 1);
  hybrid.mutable_config()->set_dp_sharding(v1::DP_SHARDING_FULL);
  hybrid.mutable_config()->set_dp_shard_group(2);
  absl::StatusOr<ProbeSpec> hybrid_spec = ProbeSpec::FromAssignment(hybrid);
  ASSERT_TRUE(hybrid_spec.ok()) << hybrid_spec.status();
  EXPECT_TRUE(CheckCudaProbeRuns(*hybrid_spec).ok()) << CheckCudaProbeRuns(*hybrid_spec);

  assignment.mutable_config()->set_dp_sharding(v1::DP_SHARDING_NONE);
  absl::StatusOr<ProbeSpec> plain = ProbeSpec::FromAssignment(assignment);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_TRUE(CheckCudaProbeRuns(*plain).ok());
  EXPECT_FALSE(plain->data_parallel_overlap().distributed_optimizer);
}

// Sharded gradients run on a dense model whose units share no tensor and whose weights are
// bf16 (UnitBuckets).
TEST(ProbeSpecTest, ShardedGradientsRunWhereUnitsAreWholeBf16Ranges) {
  v1::ProbeAssignment assignment = Valid();
  assignment.mutable_config()->set_dp_sharding(v1::DP_SHARDING_GRADIENTS);
  absl::StatusOr<ProbeSpec> spec = ProbeSpec::FromAssignment(assignment);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_TRUE(CheckCudaProbeRuns(*spec).ok()) << CheckCudaProbeRuns(*spec);

  v1::ProbeAssignment one_stage = TestAssignment("llama3.2-1b", 16, 2048, 4, 2, 1, 1, 1);
  one_stage.mutable_config()->set_dp_sharding(v1::DP_SHARDING_GRADIENTS);
  ExpectNotForTheCudaProbe(one_stage,
                           "model.tied_embeddings (true) on one pipeline stage "
                           "(config.pipeline_parallel 1) with config.dp_sharding (gradients)");

  v1::ProbeAssignment fp8 = assignment;
  fp8.mutable_training()->set_precision(v1::FP8);
  fp8.mutable_training()->set_fp8_param_gather(true);
  ExpectNotForTheCudaProbe(fp8,
                           "training.fp8_param_gather (true) with config.dp_sharding (gradients)");

  v1::ProbeAssignment moe = Mixtral();
  moe.mutable_config()->set_dp_sharding(v1::DP_SHARDING_GRADIENTS);
  ExpectNotForTheCudaProbe(
      moe, "mixture-of-experts model \"mixtral-8x7b\" with config.dp_sharding (gradients)");
}

// Hybrid sharding runs in every sharded mode on a dense model, its groups in the layout; an
// MoE model's is refused by field; a REPLICA probe, one replica, has no data-parallel groups.
TEST(ProbeSpecTest, HybridShardingRunsOnDenseModels) {
  for (v1::DataParallelSharding mode :
       {v1::DP_SHARDING_OPTIMIZER, v1::DP_SHARDING_GRADIENTS, v1::DP_SHARDING_FULL}) {
    v1::ProbeAssignment hybrid = TestAssignment("llama3.2-1b", 16, 2048, 4, 2, 2, 1, 1);
    hybrid.mutable_config()->set_dp_sharding(mode);
    hybrid.mutable_config()->set_dp_shard_group(2);
    absl::StatusOr<ProbeSpec> spec = ProbeSpec::FromAssignment(hybrid);
    ASSERT_TRUE(spec.ok()) << spec.status();
    EXPECT_TRUE(CheckCudaProbeRuns(*spec).ok()) << CheckCudaProbeRuns(*spec);
    EXPECT_TRUE(spec->layout().hybrid());
    EXPECT_EQ(spec->layout().GroupSize(RankGroup::kDataShard), 2);
    EXPECT_EQ(spec->layout().GroupSize(RankGroup::kDataReplica), 2);
    absl::StatusOr<ProbeSpec> replica = ProbeSpec::FromAssignment(AsReplicaProbe(hybrid));
    ASSERT_TRUE(replica.ok()) << replica.status();
    EXPECT_FALSE(replica->layout().hybrid());
  }
  v1::ProbeAssignment alone = TestAssignment("llama3.2-1b", 16, 2048, 4, 2, 2, 1, 1);
  alone.mutable_config()->set_dp_sharding(v1::DP_SHARDING_FULL);
  alone.mutable_config()->set_dp_shard_group(1);
  ExpectNotForTheCudaProbe(alone,
                           "config.dp_shard_group (1) with config.context_parallel (1) with "
                           "config.dp_sharding (full) shards over groups of one rank");
  v1::ProbeAssignment moe = TestAssignment("mixtral-8x7b", 16, 2048, 4, 2, 2, 1, 1);
  moe.mutable_config()->set_dp_sharding(v1::DP_SHARDING_OPTIMIZER);
  moe.mutable_config()->set_dp_shard_group(2);
  ExpectNotForTheCudaProbe(moe,
                           "config.dp_shard_group (2) on mixture-of-experts model "
                           "\"mixtral-8x7b\" with config.dp_sharding (optimizer) shards within "
                           "groups (hybrid sharding)");
}

TEST(ProbeSpecTest, WiderHeadsAreForTheOtherBackendsOnly) {
  v1::ProbeAssignment assignment = Valid();
  assignment.mutable_model()->Clear();
  assignment.mutable_model()->set_preset("qwen3-30b-a3b");
  ExpectNotForTheCudaProbe(assignment,
                           "model \"qwen3-30b-a3b\" has model.head_dim (128) other "
                           "than model.hidden_size / model.num_attention_heads (64)");
}

TEST(ProbeSpecTest, WhatTheMoeBlockDoesNotRunIsRefusedByField) {
  const std::string not_yet =
      " with mixture-of-experts model \"mixtral-8x7b\": the native probe's mixture-of-experts "
      "layers do not run it yet";
  v1::ProbeAssignment fp8 = Mixtral();
  fp8.mutable_training()->set_precision(v1::FP8);
  ExpectNotForTheCudaProbe(fp8, "training.precision (FP8)" + not_yet);
  v1::ProbeAssignment overlap = Mixtral();
  overlap.mutable_training()->set_tp_comm_overlap(true);
  ExpectNotForTheCudaProbe(overlap, "training.tp_comm_overlap (true)" + not_yet);
  v1::ProbeAssignment all_gather = Mixtral();
  all_gather.mutable_training()->set_moe_token_dispatcher(v1::MOE_TOKEN_DISPATCHER_ALLGATHER);
  ExpectNotForTheCudaProbe(all_gather, "training.moe_token_dispatcher (allgather)" + not_yet);
}

TEST(ProbeSpecTest, CapacityFactorsRunUpToTheRoutedRows) {
  // Mixtral on the valid spec's ranks routes 1024 rows x top-2 over 8 experts, 256 copies each:
  // cf 1.25 gives each expert 320 slots (padded), cf 5 1280, more than the 1024 rows.
  v1::ProbeAssignment padded = Mixtral();
  padded.mutable_training()->set_moe_capacity_factor(1.25);
  absl::StatusOr<ProbeSpec> spec = ProbeSpec::FromAssignment(padded);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_TRUE(CheckCudaProbeRuns(*spec).ok()) << CheckCudaProbeRuns(*spec);
  v1::ProbeAssignment every_row = Mixtral();
  every_row.mutable_training()->set_moe_capacity_factor(5);
  ExpectNotForTheCudaProbe(every_row,
                           "training.moe_capacity_factor (5) gives each expert a capacity of 1280 "
                           "copies per rank, more than the rank's 1024 routed tokens");
}

TEST(ProbeSpecTest, RoutedCopiesThatDoNotSplitOverTheExpertsAreRefused) {
  // 6 experts: a rank's 1024 rows x top-2 = 2048 copies are not a multiple of 6.
  v1::ProbeAssignment assignment = Mixtral();
  *assignment.mutable_model() = ShrunkMixtral();
  assignment.mutable_model()->set_num_experts(6);
  ExpectNotForTheCudaProbe(
      assignment, "(1024 tokens x top-2 = 2048) are not a multiple of model.moe.num_experts (6)");
}

TEST(ProbeSpecTest, FullProbeOnOneWorkerRunsEveryRank) {
  absl::StatusOr<ProbeSpec> spec = ProbeSpec::FromAssignment(Valid());
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_FALSE(spec->replica());
  EXPECT_EQ(spec->layout().world_size(), 8);
  EXPECT_EQ(spec->layout().dp(), 2);
  EXPECT_EQ(spec->micro_batches(), 8);
  EXPECT_EQ(spec->first_rank(), 0);
  EXPECT_EQ(spec->local_ranks(), 8);
  EXPECT_FALSE(spec->spans_processes());
  EXPECT_TRUE(spec->creates_nccl_id());
  EXPECT_EQ(spec->warmup_steps(), 1);
  EXPECT_EQ(spec->timed_steps(), 3);
}

TEST(ProbeSpecTest, ShortStepsRunTheirCountsElseTheFullStep) {
  EXPECT_THAT(ProbeSpec::FromAssignment(Valid())->TimedMicroBatches(), ElementsAre(8));
  v1::ProbeAssignment assignment = Valid();
  assignment.add_micro_batch_counts(2);
  assignment.add_micro_batch_counts(4);
  absl::StatusOr<ProbeSpec> spec = ProbeSpec::FromAssignment(assignment);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_THAT(spec->micro_batch_counts(), ElementsAre(2, 4));
  EXPECT_THAT(spec->TimedMicroBatches(), ElementsAre(2, 4));
  EXPECT_EQ(spec->micro_batches(), 8);
}

TEST(ProbeSpecTest, BadShortStepCountsNameTheField) {
  v1::ProbeAssignment one = Valid();
  one.add_micro_batch_counts(2);
  ExpectInvalid(one, "assignment.micro_batch_counts (2) must list no count or at least two");
  v1::ProbeAssignment descending = Valid();
  descending.add_micro_batch_counts(4);
  descending.add_micro_batch_counts(2);
  ExpectInvalid(descending, "assignment.micro_batch_counts[1] (2) must be in [5, 7]");
  v1::ProbeAssignment full = Valid();
  full.add_micro_batch_counts(2);
  full.add_micro_batch_counts(8);
  ExpectInvalid(full, "assignment.micro_batch_counts[1] (8) must be in [3, 7]");
  v1::ProbeAssignment interleaved = Valid();
  interleaved.mutable_config()->set_virtual_pipeline(2);
  interleaved.add_micro_batch_counts(3);
  interleaved.add_micro_batch_counts(4);
  ExpectInvalid(interleaved,
                "assignment.micro_batch_counts[0] (3) must be a multiple of "
                "pipeline_parallel (2) for an interleaved pipeline");
}

TEST(ProbeSpecTest, ShortStepsMustFitTheFullStepsActivations) {
  // pp 2 x vp 2, 8 micro-batches: a step of 2 runs every forward first, holding 4 model
  // chunks (and 2 loss chunks) on stage 1 where the full step holds 3 (and 1), which is all
  // the stage runner's slots hold. 4 and 6 keep the full step's schedule.
  v1::ProbeAssignment interleaved = Valid();
  interleaved.mutable_config()->set_virtual_pipeline(2);
  interleaved.add_micro_batch_counts(2);
  interleaved.add_micro_batch_counts(4);
  ExpectNotForTheCudaProbe(interleaved,
                           "assignment.micro_batch_counts[0] (2) holds 4 model chunks' activations "
                           "at once on pipeline stage 1, more than the full step of 8 "
                           "micro-batches (3)");
  interleaved.clear_micro_batch_counts();
  interleaved.add_micro_batch_counts(4);
  interleaved.add_micro_batch_counts(6);
  EXPECT_TRUE(CheckCudaProbeRuns(*ProbeSpec::FromAssignment(interleaved)).ok());
  // Without interleaving fewer micro-batches never hold more.
  v1::ProbeAssignment plain = Valid();
  plain.add_micro_batch_counts(1);
  plain.add_micro_batch_counts(2);
  EXPECT_TRUE(CheckCudaProbeRuns(*ProbeSpec::FromAssignment(plain)).ok());
}

TEST(ProbeSpecTest, DataParallelOverlapIsWhatTheTemplatesExport) {
  const OverlapOptions sharded = ProbeSpec::FromAssignment(Valid())->data_parallel_overlap();
  EXPECT_TRUE(sharded.distributed_optimizer);
  EXPECT_TRUE(sharded.overlap_grad_reduce);
  EXPECT_TRUE(sharded.overlap_param_gather);

  v1::ProbeAssignment assignment = Valid();
  assignment.mutable_training()->set_distributed_optimizer(false);
  const OverlapOptions replicated = ProbeSpec::FromAssignment(assignment)->data_parallel_overlap();
  EXPECT_FALSE(replicated.distributed_optimizer);
  EXPECT_TRUE(replicated.overlap_grad_reduce);
  EXPECT_FALSE(replicated.overlap_param_gather);
}

TEST(ProbeSpecTest, TrainingSwitchesAreWhatTheTemplatesExport) {
  const absl::StatusOr<ProbeSpec> plain = ProbeSpec::FromAssignment(Valid());
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_FALSE(plain->tp_comm_overlap());
  EXPECT_EQ(plain->cp_comm_type(), CpCommType::kP2p);

  v1::ProbeAssignment assignment = Valid();  // tp 2 with sequence parallelism
  assignment.mutable_training()->set_tp_comm_overlap(true);
  assignment.mutable_training()->set_cp_comm_type(v1::CP_COMM_TYPE_ALL_GATHER);
  absl::StatusOr<ProbeSpec> spec = ProbeSpec::FromAssignment(assignment);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_TRUE(spec->tp_comm_overlap());
  EXPECT_EQ(spec->cp_comm_type(), CpCommType::kAllGather);

  // At tp 1 there is no sequence parallelism, and the launch writes no --tp-comm-overlap.
  assignment = TestAssignment("llama3.2-1b", 16, 2048, 4, 1, 2, 1, 1);
  assignment.mutable_training()->set_tp_comm_overlap(true);
  spec = ProbeSpec::FromAssignment(assignment);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_FALSE(spec->tp_comm_overlap());
}

TEST(ProbeSpecTest, ReplicaProbeRunsOneDataParallelReplica) {
  v1::ProbeAssignment assignment = Valid();
  assignment.set_scope(v1::PROBE_SCOPE_REPLICA);
  assignment.set_num_ranks(4);
  assignment.mutable_gang(0)->set_num_ranks(4);
  assignment.mutable_gpu_indices()->Truncate(4);
  absl::StatusOr<ProbeSpec> spec = ProbeSpec::FromAssignment(assignment);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_TRUE(spec->replica());
  EXPECT_EQ(spec->layout().dp(), 1);
  EXPECT_EQ(spec->layout().world_size(), 4);
  // The step still has the configuration's micro-batches per replica.
  EXPECT_EQ(spec->micro_batches(), 8);
}

TEST(ProbeSpecTest, SecondGangMemberOwnsTheUpperRanks) {
  absl::StatusOr<ProbeSpec> spec = ProbeSpec::FromAssignment(AsGangMember(Valid(), 2, 1));
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->first_rank(), 4);
  EXPECT_THAT(spec->gpu_indices(), ElementsAre(0, 1, 2, 3));
  EXPECT_TRUE(spec->spans_processes());
  EXPECT_FALSE(spec->creates_nccl_id());
}

TEST(ProbeSpecTest, InvalidConfigurationNamesTheField) {
  v1::ProbeAssignment assignment = Valid();
  assignment.mutable_config()->set_tensor_parallel(3);
  ExpectInvalid(assignment, "tensor_parallel (3)");
}

TEST(ProbeSpecTest, Fp8RunsOnHopper) {
  v1::ProbeAssignment assignment = Valid();
  assignment.mutable_training()->set_precision(v1::FP8);
  absl::StatusOr<ProbeSpec> spec = ProbeSpec::FromAssignment(assignment);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_TRUE(spec->training().fp8());
}

TEST(ProbeSpecTest, Fp8IsRejectedOnAmpere) {
  v1::ProbeAssignment assignment = Valid();
  assignment.mutable_training()->set_precision(v1::FP8);
  assignment.mutable_cluster()->mutable_gpu()->set_type("a100-80gb");
  ExpectInvalid(assignment, "training.precision (FP8) needs fp8 tensor cores");
  ExpectInvalid(assignment, "a100-80gb");
}

TEST(ProbeSpecTest, Fp8ParametersAreProbedOnHopper) {
  v1::ProbeAssignment assignment = Valid();
  assignment.mutable_training()->set_precision(v1::FP8);
  assignment.mutable_training()->set_distributed_optimizer(true);
  assignment.mutable_training()->set_fp8_param_gather(true);
  const absl::StatusOr<ProbeSpec> spec = ProbeSpec::FromAssignment(assignment);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_TRUE(spec->training().fp8_param_gather());
}

TEST(ProbeSpecTest, Fp8NeedsGemmDimensionsInMultiplesOf16) {
  // A 2056-token sequence over context parallel 2: 1028 tokens per rank.
  v1::ProbeAssignment assignment = TestAssignment("llama3.2-1b", 16, 2056, 2, 1, 1, 2, 1);
  assignment.mutable_training()->set_precision(v1::FP8);
  ExpectNotForTheCudaProbe(assignment, "rows (tokens per rank");
  ExpectNotForTheCudaProbe(assignment, "(1028) must be a multiple of 16");
}

TEST(ProbeSpecTest, InterleavingNeedsMicroBatchesInWholePipelineRounds) {
  // 16 layers on pp 2 x vp 2 with 10 / dp 2 = 5 micro-batches, then 12 / 2 = 6: the
  // estimator's rule, which the probe applies.
  v1::ProbeAssignment assignment = TestAssignment("llama3.2-1b", 10, 2048, 2, 2, 2, 1, 1);
  assignment.mutable_config()->set_virtual_pipeline(2);
  ExpectInvalid(assignment, "config.pipeline_parallel (2) to divide the micro-batches per step");
  assignment.mutable_training()->set_global_batch_size(12);
  EXPECT_TRUE(ProbeSpec::FromAssignment(assignment).ok());
}

TEST(ProbeSpecTest, SequenceParallelTokensMustSplitOverTensorParallel) {
  // 8 query heads and 8 kv heads would pass the head rules with tp 8; 2 tokens per cp rank
  // cannot be split 8 ways.
  v1::ProbeAssignment assignment = TestAssignment("llama3.2-1b", 8, 4, 1, 8, 1, 2, 1);
  ExpectNotForTheCudaProbe(assignment, "config.tensor_parallel (8), which does not divide them");
}

TEST(ProbeSpecTest, AnUnevenPipelineTheSchedulerPlacedIsProbed) {
  // 16 layers on 3 stages: the first and last hold one layer fewer, the embedding and the
  // loss counting as one each (Megatron-LM's account-for-embedding/loss split).
  v1::ProbeAssignment assignment = TestAssignment("llama3.2-1b", 6, 2048, 1, 1, 3, 1, 1);
  absl::StatusOr<ProbeSpec> spec = ProbeSpec::FromAssignment(assignment);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->config().pp(), 3);
}

TEST(ProbeSpecTest, TheDeadlineIsANumberOfSeconds) {
  v1::ProbeAssignment assignment = Valid();
  assignment.set_deadline_seconds(-1);
  ExpectInvalid(assignment, "assignment.deadline_seconds (-1) must be a number of seconds >= 0");
  assignment.set_deadline_seconds(std::nan(""));
  ExpectInvalid(assignment, "assignment.deadline_seconds (nan)");
  assignment.set_deadline_seconds(0);
  EXPECT_EQ(ProbeSpec::FromAssignment(assignment)->deadline_seconds(), 0);
}

TEST(ProbeSpecTest, TheAssignmentIsKeptForWhatBackendsPassOn) {
  v1::ProbeAssignment assignment = Valid();
  assignment.set_command_template("megatron-llama");
  absl::StatusOr<ProbeSpec> spec = ProbeSpec::FromAssignment(assignment);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->assignment().SerializeAsString(), assignment.SerializeAsString());
  EXPECT_EQ(spec->name(), "searches/1/candidates/0/probes/1");
}

TEST(ProbeSpecTest, ScopeMustBeSet) {
  v1::ProbeAssignment assignment = Valid();
  assignment.set_scope(v1::PROBE_SCOPE_UNSPECIFIED);
  ExpectInvalid(assignment, "assignment.scope (PROBE_SCOPE_UNSPECIFIED)");
}

TEST(ProbeSpecTest, RankCountMustMatchTheScope) {
  v1::ProbeAssignment assignment = Valid();
  assignment.set_num_ranks(4);
  ExpectInvalid(assignment, "assignment.num_ranks (4) must be 8");
}

TEST(ProbeSpecTest, StepCountsAreBounded) {
  v1::ProbeAssignment assignment = Valid();
  assignment.set_timed_steps(0);
  ExpectInvalid(assignment, "assignment.timed_steps (0) must be in [1, 10000]");
  assignment = Valid();
  assignment.set_warmup_steps(-1);
  ExpectInvalid(assignment, "assignment.warmup_steps (-1)");
}

TEST(ProbeSpecTest, GangMustCoverTheRanksInWholeTensorContextGroups) {
  v1::ProbeAssignment gap = AsGangMember(Valid(), 2, 0);
  gap.mutable_gang(1)->set_first_rank(6);
  ExpectInvalid(gap, "assignment.gang[1].first_rank (6) must be 4");

  v1::ProbeAssignment split_group = AsGangMember(Valid(), 2, 0);
  split_group.mutable_gang(0)->set_num_ranks(3);
  split_group.mutable_gang(1)->set_first_rank(3);
  split_group.mutable_gang(1)->set_num_ranks(5);
  ExpectInvalid(split_group, "assignment.gang[0].num_ranks (3) must be a positive multiple");

  v1::ProbeAssignment empty = Valid();
  empty.clear_gang();
  ExpectInvalid(empty, "assignment.gang is empty");

  v1::ProbeAssignment index = Valid();
  index.set_gang_index(1);
  ExpectInvalid(index, "assignment.gang_index (1) must be in [0, 0]");
}

TEST(ProbeSpecTest, GpusMustBeOnePerLocalRankAndDistinct) {
  v1::ProbeAssignment few = Valid();
  few.mutable_gpu_indices()->Truncate(7);
  ExpectInvalid(few, "assignment.gpu_indices lists 7 GPUs");

  v1::ProbeAssignment repeated = Valid();
  repeated.set_gpu_indices(7, 0);
  ExpectInvalid(repeated, "assignment.gpu_indices (0) must be distinct");
}

}  // namespace
}  // namespace paratune
