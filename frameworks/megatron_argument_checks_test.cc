#include "frameworks/megatron_argument_checks.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/export.h"
#include "convert/estimate_requests.h"
#include "estimator/model_spec.h"
#include "estimator/parallel_config.h"
#include "estimator/training_spec.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "launch/builtin_templates.h"
#include "launch/launch_values.h"
#include "launch/test_assignments.h"
#include "proto/autotuner_service.pb.h"
#include "proto/search.pb.h"

namespace paratune {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Llama-3.1-8B on 16 GPUs as dp2 tp2 pp2 cp2, interleaved, full recompute: what the template
// writes for such a candidate.
std::vector<std::string> Good() {
  return {"--transformer-impl=transformer_engine",
          "--num-layers=32",
          "--hidden-size=4096",
          "--ffn-hidden-size=14336",
          "--num-attention-heads=32",
          "--group-query-attention",
          "--num-query-groups=8",
          "--vocab-size=128256",
          "--seq-length=8192",
          "--max-position-embeddings=8192",
          "--position-embedding-type=rope",
          "--rotary-base=500000",
          "--normalization=RMSNorm",
          "--norm-epsilon=1e-5",
          "--swiglu",
          "--disable-bias-linear",
          "--untie-embeddings-and-output-weights",
          "--attention-dropout=0",
          "--hidden-dropout=0",
          "--tensor-model-parallel-size=2",
          "--pipeline-model-parallel-size=2",
          "--context-parallel-size=2",
          "--sequence-parallel",
          "--num-layers-per-virtual-pipeline-stage=8",
          "--recompute-granularity=full",
          "--recompute-method=uniform",
          "--recompute-num-layers=1",
          "--micro-batch-size=2",
          "--global-batch-size=1024",
          "--bf16",
          "--use-distributed-optimizer",
          "--accumulate-allreduce-grads-in-fp32",
          "--overlap-grad-reduce",
          "--overlap-param-gather",
          "--lr=3e-4",
          "--min-lr=3e-5",
          "--lr-decay-style=cosine",
          "--weight-decay=0.1",
          "--adam-beta1=0.9",
          "--adam-beta2=0.95",
          "--clip-grad=1.0"};
}

constexpr int64_t kWorld = 16;

// The environment the Megatron-LM template sets without Megatron-FSDP.
std::map<std::string, std::string> OneConnection() {
  return {{"CUDA_DEVICE_MAX_CONNECTIONS", "1"}};
}

// "[1,1,...,1]", one element per layer.
std::string EveryLayer(int layers) {
  std::vector<std::string> ones(layers, "1");
  return absl::StrCat("[", absl::StrJoin(ones, ","), "]");
}

// `arguments` with every element of flag `name` ("--x" or "--x=...") removed.
std::vector<std::string> Without(std::vector<std::string> arguments, const std::string& name) {
  std::vector<std::string> kept;
  for (std::string& argument : arguments) {
    if (argument != name && !absl::StartsWith(argument, name + "=")) {
      kept.push_back(std::move(argument));
    }
  }
  return kept;
}

// `arguments` with `changes` in place of the flags of the same names, or added at the end.
std::vector<std::string> With(std::vector<std::string> arguments,
                              const std::vector<std::string>& changes) {
  for (const std::string& change : changes) {
    arguments = Without(std::move(arguments), change.substr(0, change.find('=')));
    arguments.push_back(change);
  }
  return arguments;
}

// Qwen3-30B-A3B's shape (48 layers, 128 experts of 768, top-8, heads of 128 where h / a is
// 64) on 16 GPUs as dp4 tp2 pp2 with ep8 etp1, as the template writes it.
std::vector<std::string> GoodMoe() {
  return With(
      Without(Good(), "--num-layers-per-virtual-pipeline-stage"),
      {"--num-layers=48", "--hidden-size=2048", "--ffn-hidden-size=6144",
       "--num-attention-heads=32", "--num-query-groups=4", "--kv-channels=128",
       "--context-parallel-size=1", "--vocab-size=151936", "--num-experts=128",
       "--moe-layer-freq=" + EveryLayer(48), "--moe-ffn-hidden-size=768", "--moe-router-topk=8",
       "--moe-router-score-function=softmax", "--moe-router-dtype=fp32",
       "--moe-aux-loss-coeff=1e-2", "--moe-grouped-gemm", "--moe-token-dispatcher-type=alltoall",
       "--expert-model-parallel-size=8", "--expert-tensor-parallel-size=1"});
}

// The status of checking `arguments` on `world` ranks.
absl::Status Check(const std::vector<std::string>& arguments, int64_t world = kWorld) {
  return CheckMegatronArguments(arguments, world, OneConnection()).status();
}

// Expects that `arguments` break rule `rule` (INVALID_ARGUMENT naming it and `detail`).
void ExpectRule(const std::vector<std::string>& arguments, const std::string& rule,
                const std::string& detail, int64_t world = kWorld) {
  const absl::Status status = Check(arguments, world);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  const std::string message(status.message());
  EXPECT_THAT(message, HasSubstr(absl::StrCat("rule \"", rule, "\"")));
  EXPECT_THAT(message, HasSubstr(detail));
}

TEST(MegatronArgumentChecksTest, AGoodListPassesAndSaysWhatMegatronMakesOfIt) {
  absl::StatusOr<MegatronLaunch> launch = CheckMegatronArguments(Good(), kWorld, OneConnection());
  ASSERT_TRUE(launch.ok()) << launch.status();
  EXPECT_EQ(launch->data_parallel, 2);
  EXPECT_EQ(launch->tensor_parallel, 2);
  EXPECT_EQ(launch->pipeline_parallel, 2);
  EXPECT_EQ(launch->context_parallel, 2);
  EXPECT_EQ(launch->virtual_pipeline, 2);  // 32 / 2 / 8
  EXPECT_FALSE(launch->uneven_pipeline);
  EXPECT_EQ(launch->micro_batches, 256);  // 1024 / (2 x 2)
  EXPECT_EQ(launch->query_groups, 8);
  EXPECT_TRUE(launch->sequence_parallel);
  EXPECT_EQ(launch->recompute_granularity, "full");
  EXPECT_EQ(launch->fp8_format, "");
  EXPECT_TRUE(launch->bf16);
  EXPECT_TRUE(launch->distributed_optimizer);
  EXPECT_TRUE(launch->fp32_gradients);
  EXPECT_TRUE(launch->overlap_param_gather);
}

TEST(MegatronArgumentChecksTest, ArgparseReadsFormsTypesAndChoices) {
  // "--name value" is read as "--name=value".
  std::vector<std::string> spaced = Without(Good(), "--micro-batch-size");
  spaced.push_back("--micro-batch-size");
  spaced.push_back("2");
  EXPECT_TRUE(Check(spaced).ok());
  ExpectRule(With(Good(), {"--fp8-format=e5m2"}), "argparse", "invalid choice: 'e5m2'");
  ExpectRule(With(Good(), {"--recompute-granularity=block"}), "argparse", "invalid choice");
  ExpectRule(With(Good(), {"--recompute-method=all"}), "argparse", "invalid choice");
  ExpectRule(With(Good(), {"--normalization=rmsnorm"}), "argparse", "invalid choice");
  ExpectRule(With(Good(), {"--rotary-base=5e5"}), "argparse", "invalid int value: '5e5'");
  ExpectRule(With(Good(), {"--lr=fast"}), "argparse", "invalid float value");
  ExpectRule(With(Good(), {"--sequence-parallel=true"}), "argparse", "ignored explicit argument");
  ExpectRule(With(Good(), {"--seq-length"}), "argparse", "expected one argument");
  std::vector<std::string> stray = Good();
  stray.push_back("pretrain_gpt.py");
  ExpectRule(stray, "argparse", "unrecognized arguments: pretrain_gpt.py");
  // A flag outside the table passes with its values, as long as it changes no replayed rule.
  EXPECT_TRUE(Check(With(Good(), {"--attention-backend=flash", "--log-interval=1"})).ok());
  // The last of a repeated flag counts.
  std::vector<std::string> repeated = Good();
  repeated.insert(repeated.begin(), "--tensor-model-parallel-size=3");
  EXPECT_TRUE(Check(repeated).ok());
}

TEST(MegatronArgumentChecksTest, WorldSizeDivisibleByTpPpCp) {
  ExpectRule(Good(), "world-size", "world size (12) is not divisible by", 12);
  ExpectRule(With(Good(), {"--context-parallel-size=0"}), "world-size", "must be >= 1");
  EXPECT_EQ(Check(Good(), 0).code(), absl::StatusCode::kInvalidArgument);
}

TEST(MegatronArgumentChecksTest, HierarchicalContextParallel) {
  ExpectRule(With(Good(), {"--hierarchical-context-parallel-sizes=4"}),
             "hierarchical-context-parallel", "is not --context-parallel-size (2)");
  ExpectRule(With(Good(), {"--cp-comm-type=a2a+p2p"}), "hierarchical-context-parallel",
             "needs --hierarchical-context-parallel-sizes");
  EXPECT_TRUE(
      Check(With(Good(), {"--cp-comm-type=a2a+p2p", "--hierarchical-context-parallel-sizes=2"}))
          .ok());
}

TEST(MegatronArgumentChecksTest, Batch) {
  ExpectRule(Without(Good(), "--micro-batch-size"), "micro-batch-size", "is required");
  ExpectRule(With(Good(), {"--micro-batch-size=0"}), "micro-batch-size", "must be > 0");
  ExpectRule(With(Good(), {"--global-batch-size=-4"}), "global-batch-size", "must be > 0");
  ExpectRule(With(Good(), {"--global-batch-size=1022"}), "batch-divisibility",
             "eval global batch (1022");
  ExpectRule(With(Good(), {"--global-batch-size=1022", "--eval-global-batch-size=1024"}),
             "batch-divisibility", "--global-batch-size (1022) is not divisible");
  // Without --global-batch-size it is micro-batch x dp: one micro-batch per step, too few
  // for the interleaved schedule's groups of pp.
  ExpectRule(Without(Good(), "--global-batch-size"), "interleaved-micro-batches",
             "[pp = 2, micro-batches = 1]");
  absl::StatusOr<MegatronLaunch> launch = CheckMegatronArguments(
      Without(Without(Good(), "--global-batch-size"), "--num-layers-per-virtual-pipeline-stage"),
      kWorld, OneConnection());
  ASSERT_TRUE(launch.ok()) << launch.status();
  EXPECT_EQ(launch->global_batch_size, 4);
}

TEST(MegatronArgumentChecksTest, RequiredModelArguments) {
  ExpectRule(Without(Good(), "--max-position-embeddings"), "required",
             "--max-position-embeddings is required");
  ExpectRule(Without(Good(), "--num-layers"), "required", "--num-layers is required");
  ExpectRule(Without(Good(), "--seq-length"), "seq-length", "is required");
}

TEST(MegatronArgumentChecksTest, PipelineSplit) {
  const std::vector<std::string> even = Without(Good(), "--num-layers-per-virtual-pipeline-stage");
  ExpectRule(With(even, {"--num-layers=31"}), "pipeline-split", "--num-layers (31) = 31");
  ExpectRule(With(even, {"--num-layers=32", "--account-for-embedding-in-pipeline-split"}),
             "pipeline-split", "+ 1 (--account-for-embedding-in-pipeline-split) = 33");
  // 30 + 1 + 1 splits over 2 stages.
  EXPECT_TRUE(Check(With(even, {"--num-layers=30", "--account-for-embedding-in-pipeline-split",
                                "--account-for-loss-in-pipeline-split"}))
                  .ok());
  ExpectRule(With(Good(), {"--num-layers=30"}), "layers-per-virtual-stage",
             "(--num-layers (30) = 30 / 2 = 15) are not divisible by "
             "--num-layers-per-virtual-pipeline-stage (8)");
  ExpectRule(With(Good(), {"--num-layers-per-virtual-pipeline-stage=0"}),
             "layers-per-virtual-stage", "(0)");
  // The uneven interleaved split of Llama-3.1-405B: (126 + 2) / (8 x 2) = 8 per chunk; 7, which
  // leaves the embedding and the loss out, is rejected.
  const std::vector<std::string> uneven =
      With(Good(), {"--num-layers=126", "--num-attention-heads=128", "--hidden-size=16384",
                    "--tensor-model-parallel-size=1", "--context-parallel-size=1",
                    "--pipeline-model-parallel-size=8", "--account-for-embedding-in-pipeline-split",
                    "--account-for-loss-in-pipeline-split", "--global-batch-size=2048"});
  absl::StatusOr<MegatronLaunch> launch = CheckMegatronArguments(uneven, 16, OneConnection());
  ASSERT_TRUE(launch.ok()) << launch.status();
  EXPECT_EQ(launch->virtual_pipeline, 2);
  EXPECT_TRUE(launch->uneven_pipeline);
  ExpectRule(
      With(uneven, {"--num-layers-per-virtual-pipeline-stage=7"}), "layers-per-virtual-stage",
      "= 128 / 8 = 16) are not divisible by --num-layers-per-virtual-pipeline-stage (7)", 16);
  ExpectRule(With(Without(uneven, "--account-for-loss-in-pipeline-split"),
                  {"--num-layers-per-virtual-pipeline-stage=8"}),
             "pipeline-split", "= 127 is not divisible", 16);
  // One layer per virtual stage (8 / 8): interleaving off.
  launch = CheckMegatronArguments(With(Good(), {"--num-layers-per-virtual-pipeline-stage=16"}),
                                  kWorld, OneConnection());
  ASSERT_TRUE(launch.ok()) << launch.status();
  EXPECT_EQ(launch->virtual_pipeline, 1);
}

TEST(MegatronArgumentChecksTest, VirtualStagesPerPipelineRank) {
  const std::vector<std::string> by_stages =
      With(Without(Good(), "--num-layers-per-virtual-pipeline-stage"),
           {"--num-virtual-stages-per-pipeline-rank=2"});
  absl::StatusOr<MegatronLaunch> launch =
      CheckMegatronArguments(by_stages, kWorld, OneConnection());
  ASSERT_TRUE(launch.ok()) << launch.status();
  EXPECT_EQ(launch->virtual_pipeline, 2);
  ExpectRule(With(by_stages, {"--num-layers-per-virtual-pipeline-stage=8"}),
             "virtual-pipeline-flags", "no more than one");
  ExpectRule(With(by_stages, {"--num-virtual-stages-per-pipeline-rank=0"}), "virtual-stages",
             ">= 1");
  // 32 / 2 = 16 layers per rank do not split into 3 chunks: the model build rejects it.
  ExpectRule(With(by_stages, {"--num-virtual-stages-per-pipeline-rank=3"}), "chunk-layers",
             "(16) are not divisible by the virtual pipeline size (3)");
  ExpectRule(With(by_stages, {"--num-virtual-stages-per-pipeline-rank=3",
                              "--account-for-embedding-in-pipeline-split",
                              "--account-for-loss-in-pipeline-split", "--num-layers=30"}),
             "account-for-pipeline-split", "(16) are not divisible by the virtual pipeline size");
}

TEST(MegatronArgumentChecksTest, InterleavingNeedsPipelineStages) {
  ExpectRule(With(Good(), {"--pipeline-model-parallel-size=1", "--context-parallel-size=4",
                           "--num-layers-per-virtual-pipeline-stage=16"}),
             "interleaving-pipeline-size", "need --pipeline-model-parallel-size > 1, not 1");
  ExpectRule(With(Good(), {"--no-overlap-p2p-communication"}), "interleaving-pipeline-size",
             "> 2, not 2");
}

// Good() with Megatron-FSDP sharding `strategy`, as a full-sharding export writes it.
std::vector<std::string> GoodFsdp(const std::string& strategy) {
  return With(Without(Good(), "--use-distributed-optimizer"),
              {"--use-megatron-fsdp", "--data-parallel-sharding-strategy=" + strategy,
               "--ckpt-format=fsdp_dtensor"});
}

TEST(MegatronArgumentChecksTest, MegatronFsdp) {
  const std::map<std::string, std::string> unset;
  const std::map<std::string, std::string> eight = {{"CUDA_DEVICE_MAX_CONNECTIONS", "8"}};
  for (const char* strategy : {"optim_grads_params", "optim_grads", "optim", "no_shard"}) {
    absl::StatusOr<MegatronLaunch> launch =
        CheckMegatronArguments(GoodFsdp(strategy), kWorld, eight);
    ASSERT_TRUE(launch.ok()) << strategy << ": " << launch.status();
    EXPECT_TRUE(launch->megatron_fsdp);
    EXPECT_TRUE(launch->distributed_optimizer);  // turned on (arguments.py:1112)
    EXPECT_EQ(launch->data_parallel_sharding_strategy, strategy);
    EXPECT_TRUE(launch->overlap_param_gather);
  }
  absl::StatusOr<MegatronLaunch> launch = CheckMegatronArguments(
      Without(GoodFsdp("optim"), "--data-parallel-sharding-strategy"), kWorld, unset);
  ASSERT_TRUE(launch.ok()) << launch.status();
  EXPECT_EQ(launch->data_parallel_sharding_strategy, "optim_grads_params");
  launch = CheckMegatronArguments(Good(), kWorld, OneConnection());
  ASSERT_TRUE(launch.ok()) << launch.status();
  EXPECT_FALSE(launch->megatron_fsdp);
  EXPECT_EQ(launch->data_parallel_sharding_strategy, "");

  const std::vector<std::string> full = GoodFsdp("optim_grads_params");
  ExpectRule(With(full, {"--data-parallel-sharding-strategy=full"}), "argparse",
             "invalid choice: 'full'");
  // Megatron-LM's template environment (CUDA_DEVICE_MAX_CONNECTIONS=1) fails Megatron-FSDP.
  ExpectRule(full, "megatron-fsdp-connections", "CUDA_DEVICE_MAX_CONNECTIONS > 1 or unset");
  EXPECT_EQ(CheckMegatronArguments(Without(full, "--ckpt-format"), kWorld, unset).status(),
            absl::InvalidArgumentError(
                "Megatron-LM core_v0.19.0 rejects the arguments: rule "
                "\"megatron-fsdp-ckpt-format\" (megatron/training/arguments.py:1146-1147): "
                "Megatron-FSDP (--use-megatron-fsdp) requires --ckpt-format=fsdp_dtensor, not "
                "torch_dist"));
  EXPECT_THAT(CheckMegatronArguments(
                  With(full, {"--check-weight-hash-across-dp-replicas-interval=10"}), kWorld, unset)
                  .status()
                  .message(),
              HasSubstr("rule \"megatron-fsdp-weight-hash\""));
  EXPECT_TRUE(CheckMegatronArguments(With(GoodFsdp("optim_grads"),
                                          {"--check-weight-hash-across-dp-replicas-interval=10"}),
                                     kWorld, unset)
                  .ok());
  // The checkpoint format of Megatron-FSDP without it.
  ExpectRule(With(Good(), {"--ckpt-format=fsdp_dtensor"}), "fsdp-dtensor",
             "only supported with Megatron-FSDP");
  // Tensor parallelism without Megatron-FSDP needs one connection; with it, more.
  EXPECT_THAT(CheckMegatronArguments(Good(), kWorld, unset).status().message(),
              HasSubstr("rule \"cuda-device-max-connections\""));
  EXPECT_THAT(CheckMegatronArguments(Good(), kWorld, eight).status().message(),
              HasSubstr("CUDA_DEVICE_MAX_CONNECTIONS=1"));
  EXPECT_TRUE(CheckMegatronArguments(
                  With(Good(), {"--tensor-model-parallel-size=1", "--context-parallel-size=1",
                                "--pipeline-model-parallel-size=2"}),
                  kWorld, unset)
                  .ok());
}

TEST(MegatronArgumentChecksTest, HybridShardingReplicas) {
  const std::map<std::string, std::string> eight = {{"CUDA_DEVICE_MAX_CONNECTIONS", "8"}};
  // dp2 x cp2 = 4 ranks shard in groups of 2, 2 replicas.
  absl::StatusOr<MegatronLaunch> launch = CheckMegatronArguments(
      With(GoodFsdp("optim_grads_params"), {"--num-distributed-optimizer-instances=2"}), kWorld,
      eight);
  ASSERT_TRUE(launch.ok()) << launch.status();
  EXPECT_EQ(launch->distributed_optimizer_instances, 2);
  // The partial distributed optimizer takes it too.
  launch = CheckMegatronArguments(With(Good(), {"--num-distributed-optimizer-instances=4"}), kWorld,
                                  OneConnection());
  ASSERT_TRUE(launch.ok()) << launch.status();
  EXPECT_EQ(launch->distributed_optimizer_instances, 4);
  ExpectRule(With(Good(), {"--num-distributed-optimizer-instances=3"}),
             "distributed-optimizer-instances",
             "data parallel x context parallel size (4) is not divisible by "
             "--num-distributed-optimizer-instances (3)");
  ExpectRule(With(Good(), {"--num-distributed-optimizer-instances=0"}),
             "distributed-optimizer-instances", "(0)");
  // Qwen3-30B-A3B's experts as ep8 on 16 GPUs leave an expert data-parallel size of 1.
  ExpectRule(With(GoodMoe(), {"--num-distributed-optimizer-instances=2"}),
             "distributed-optimizer-instances",
             "expert data parallel size (1) is not divisible by "
             "--num-distributed-optimizer-instances (2)");
}

TEST(MegatronArgumentChecksTest, DataParallelOverlapAndDistributedOptimizer) {
  ExpectRule(Without(Good(), "--use-distributed-optimizer"), "overlap-param-gather",
             "distributed optimizer");
  ExpectRule(Without(Good(), "--overlap-grad-reduce"), "overlap-param-gather",
             "needs --overlap-grad-reduce");
  ExpectRule(With(Good(), {"--overlap-param-gather-with-optimizer-step"}),
             "overlap-param-gather-with-optimizer-step", "--ckpt-format=torch");
  EXPECT_TRUE(
      Check(With(Good(), {"--overlap-param-gather-with-optimizer-step", "--ckpt-format=torch"}))
          .ok());
  ExpectRule(With(Without(Good(), "--num-layers-per-virtual-pipeline-stage"),
                  {"--overlap-param-gather-with-optimizer-step", "--ckpt-format=torch"}),
             "overlap-param-gather-with-optimizer-step", "interleaving");
  ExpectRule(With(Without(Without(Good(), "--use-distributed-optimizer"), "--overlap-param-gather"),
                  {"--fp8-param-gather"}),
             "fp8-param-gather", "distributed optimizer");
  absl::StatusOr<MegatronLaunch> launch = CheckMegatronArguments(
      With(Good(), {"--fp8-format=hybrid", "--fp8-param-gather"}), kWorld, OneConnection());
  ASSERT_TRUE(launch.ok()) << launch.status();
  EXPECT_TRUE(launch->fp8_param_gather);
  ExpectRule(With(Good(), {"--fp8-param-gather"}), "fp8-param",
             "must be used together with fp8 mode");
  ExpectRule(With(Good(), {"--disable-gloo-process-groups", "--ckpt-format=torch"}),
             "gloo-process-groups", "distributed checkpoint format");
}

TEST(MegatronArgumentChecksTest, Precision) {
  ExpectRule(With(Good(), {"--fp8-format=hybrid", "--fp4-format=e2m1"}), "fp4-fp8",
             "cannot be used together");
  ExpectRule(With(Good(), {"--fp16"}), "fp16-bf16", "cannot be used together");
  ExpectRule(With(Good(), {"--main-grads-dtype=bf16"}), "main-grads-dtype",
             "--accumulate-allreduce-grads-in-fp32");
  absl::StatusOr<MegatronLaunch> launch =
      CheckMegatronArguments(With(Good(), {"--fp8-format=hybrid"}), kWorld, OneConnection());
  ASSERT_TRUE(launch.ok()) << launch.status();
  EXPECT_EQ(launch->fp8_format, "hybrid");
  // --grad-reduce-in-bf16 wins over --accumulate-allreduce-grads-in-fp32, silently.
  launch = CheckMegatronArguments(With(Good(), {"--grad-reduce-in-bf16"}), kWorld, OneConnection());
  ASSERT_TRUE(launch.ok()) << launch.status();
  EXPECT_FALSE(launch->fp32_gradients);
  // bf16 accumulates in fp32 unless told otherwise.
  launch = CheckMegatronArguments(Without(Good(), "--accumulate-allreduce-grads-in-fp32"), kWorld,
                                  OneConnection());
  ASSERT_TRUE(launch.ok()) << launch.status();
  EXPECT_TRUE(launch->fp32_gradients);
}

TEST(MegatronArgumentChecksTest, ModelShape) {
  ExpectRule(With(Good(), {"--num-attention-heads=48", "--hidden-size=4000"}), "kv-channels",
             "--hidden-size (4000) is not divisible by --num-attention-heads (48)");
  EXPECT_TRUE(
      Check(With(Good(), {"--num-attention-heads=48", "--hidden-size=4000", "--kv-channels=128"}))
          .ok());
  ExpectRule(
      With(Good(), {"--tensor-model-parallel-size=4", "--context-parallel-size=1",
                    "--num-attention-heads=30", "--hidden-size=3840", "--num-query-groups=2"}),
      "attention-heads", "(30) must be a multiple of --tensor-model-parallel-size (4)");
  ExpectRule(With(Good(), {"--num-query-groups=3"}), "query-groups",
             "the query groups (3, --num-query-groups with --group-query-attention)");
  // Groups may divide tp (replicated across tp ranks), and without --group-query-attention
  // --num-query-groups is not read.
  EXPECT_TRUE(Check(With(Good(), {"--num-query-groups=1"})).ok());
  absl::StatusOr<MegatronLaunch> launch = CheckMegatronArguments(
      With(Without(Good(), "--group-query-attention"), {"--num-query-groups=3"}), kWorld,
      OneConnection());
  ASSERT_TRUE(launch.ok()) << launch.status();
  EXPECT_EQ(launch->query_groups, 32);
}

TEST(MegatronArgumentChecksTest, SequenceAndPositions) {
  ExpectRule(With(Good(), {"--seq-length=8190", "--max-position-embeddings=8190"}),
             "context-parallel-sequence", "(8190) is not a multiple of 2 x");
  ExpectRule(With(Good(), {"--max-position-embeddings=4096"}), "max-position-embeddings",
             "(4096) must be at least --seq-length (8192)");
  ExpectRule(With(Good(), {"--min-lr=1e-3"}), "min-lr", "must be at most --lr");
}

TEST(MegatronArgumentChecksTest, Recompute) {
  ExpectRule(Without(Good(), "--recompute-method"), "recompute", "needs --recompute-method");
  ExpectRule(Without(Good(), "--recompute-num-layers"), "recompute",
             "needs --recompute-num-layers");
  const std::vector<std::string> selective =
      With(Without(Without(Good(), "--recompute-method"), "--recompute-num-layers"),
           {"--recompute-granularity=selective"});
  EXPECT_TRUE(Check(selective).ok());
  ExpectRule(With(selective, {"--recompute-method=uniform"}), "selective-recompute-method",
             "not supported");
  ExpectRule(With(selective, {"--recompute-num-layers=1"}), "recompute", "must be unset");
  ExpectRule(With(selective, {"--distribute-saved-activations"}), "distribute-saved-activations",
             "--recompute-granularity=full");
  ExpectRule(With(Good(), {"--distribute-saved-activations"}), "distribute-saved-activations",
             "must be off with sequence parallelism");
  EXPECT_TRUE(
      Check(With(Without(Good(), "--sequence-parallel"), {"--distribute-saved-activations"})).ok());
  EXPECT_TRUE(
      Check(Without(Without(Without(Good(), "--recompute-granularity"), "--recompute-method"),
                    "--recompute-num-layers"))
          .ok());
}

TEST(MegatronArgumentChecksTest, SequenceParallel) {
  // tp = 1: turned off, not rejected.
  absl::StatusOr<MegatronLaunch> launch = CheckMegatronArguments(
      With(Good(), {"--tensor-model-parallel-size=1", "--context-parallel-size=4"}), kWorld,
      OneConnection());
  ASSERT_TRUE(launch.ok()) << launch.status();
  EXPECT_FALSE(launch->sequence_parallel);
  ExpectRule(With(Good(), {"--tensor-model-parallel-size=1", "--context-parallel-size=4",
                           "--tp-comm-overlap"}),
             "tp-comm-overlap", "needs sequence parallelism");
  launch = CheckMegatronArguments(With(Good(), {"--tp-comm-overlap"}), kWorld, OneConnection());
  ASSERT_TRUE(launch.ok()) << launch.status();
  EXPECT_TRUE(launch->tp_comm_overlap);
  EXPECT_FALSE(CheckMegatronArguments(Good(), kWorld, OneConnection())->tp_comm_overlap);
  // 2 context ranks of 20 tokens each do not split over 8 tensor ranks.
  ExpectRule(With(Good(), {"--seq-length=40", "--max-position-embeddings=40",
                           "--tensor-model-parallel-size=8", "--pipeline-model-parallel-size=1",
                           "--num-layers-per-virtual-pipeline-stage=32"}),
             "sequence-parallel-split", "(--seq-length 40 / cp 2 = 20) is not divisible by", 32);
}

TEST(MegatronArgumentChecksTest, ContextParallelCommunicationTypes) {
  std::vector<std::string> two = Good();
  for (const char* element : {"--cp-comm-type", "p2p", "a2a"}) two.push_back(element);
  ExpectRule(two, "cp-comm-type", "names 2 types, not one per layer (32)");
  // An explicit "=value" is the only value: argparse reads what follows as another argument.
  two = Good();
  for (const char* element : {"--cp-comm-type=p2p", "a2a"}) two.push_back(element);
  ExpectRule(two, "argparse", "unrecognized arguments: a2a");
  std::vector<std::string> per_layer = Good();
  per_layer.push_back("--cp-comm-type");
  for (int i = 0; i < 32; ++i) per_layer.push_back(i % 2 == 0 ? "p2p" : "a2a");
  absl::StatusOr<MegatronLaunch> launch =
      CheckMegatronArguments(per_layer, kWorld, OneConnection());
  ASSERT_TRUE(launch.ok()) << launch.status();
  EXPECT_EQ(launch->cp_comm_types.size(), 32u);
  // p2p unless told otherwise.
  EXPECT_THAT(CheckMegatronArguments(Good(), kWorld, OneConnection())->cp_comm_types,
              ElementsAre("p2p"));
  launch =
      CheckMegatronArguments(With(Good(), {"--cp-comm-type=all_gather"}), kWorld, OneConnection());
  ASSERT_TRUE(launch.ok()) << launch.status();
  EXPECT_THAT(launch->cp_comm_types, ElementsAre("all_gather"));
  // Megatron-LM's --help spells it "allgather"; Transformer Engine's attention refuses that at
  // the first forward, when there is context parallelism.
  ExpectRule(With(Good(), {"--cp-comm-type=allgather"}), "cp-comm-type-value",
             "Unsupported communication type: allgather");
  EXPECT_TRUE(Check(With(Good(), {"--cp-comm-type=allgather", "--context-parallel-size=1"})).ok());
}

TEST(MegatronArgumentChecksTest, InterleavedScheduleMicroBatches) {
  // 12 / (2 x 2) = 3 micro-batches: groups of pp = 2 leave a last group of 1.
  ExpectRule(With(Good(), {"--global-batch-size=12", "--micro-batch-size=2"}),
             "interleaved-micro-batches", "leave a last group of 1");
  ExpectRule(With(Good(), {"--global-batch-size=4", "--micro-batch-size=2"}),
             "interleaved-micro-batches", "[pp = 2, micro-batches = 1]");
  ExpectRule(With(Good(),
                  {"--pipeline-model-parallel-size=4", "--context-parallel-size=1",
                   "--num-layers-per-virtual-pipeline-stage=4", "--global-batch-size=32",
                   "--micro-batch-size=2", "--microbatch-group-size-per-virtual-pipeline-stage=6"}),
             "interleaved-micro-batches", "last group of 2");
  // Without interleaving any micro-batch count is fine.
  EXPECT_TRUE(Check(With(Without(Good(), "--num-layers-per-virtual-pipeline-stage"),
                         {"--global-batch-size=12", "--micro-batch-size=2"}))
                  .ok());
}

TEST(MegatronArgumentChecksTest, FlexDispatcherRules) {
  const std::vector<std::string> flex = With(GoodMoe(), {"--moe-token-dispatcher-type=flex"});
  absl::StatusOr<MegatronLaunch> launch = CheckMegatronArguments(flex, kWorld, OneConnection());
  ASSERT_TRUE(launch.ok()) << launch.status();
  EXPECT_EQ(launch->moe_token_dispatcher_type, "flex");
  EXPECT_EQ(launch->moe_flex_dispatcher_backend, "deepep");  // transformer_config.py:869
  launch = CheckMegatronArguments(With(flex, {"--moe-flex-dispatcher-backend=hybridep"}), kWorld,
                                  OneConnection());
  ASSERT_TRUE(launch.ok()) << launch.status();
  EXPECT_EQ(launch->moe_flex_dispatcher_backend, "hybridep");
  ExpectRule(With(flex, {"--moe-flex-dispatcher-backend=deep_ep"}), "argparse", "deep_ep");
  ExpectRule(With(flex, {"--moe-expert-capacity-factor=1", "--moe-pad-expert-input-to-capacity"}),
             "moe-flex-deepep", "does not support moe_pad_expert_input_to_capacity");
  ExpectRule(With(flex, {"--expert-model-parallel-size=1"}), "moe-flex-deepep",
             "DeepEP dispatcher requires TPxEP > 1");
  // NCCL EP: only under flex, on more than one rank, sized by a rank capacity factor, whose
  // own rules the replay does not hold.
  ExpectRule(With(GoodMoe(), {"--moe-flex-dispatcher-backend=ncclep"}), "moe-flex-ncclep",
             "requires moe_token_dispatcher_type='flex'");
  const std::vector<std::string> ncclep = With(flex, {"--moe-flex-dispatcher-backend=ncclep"});
  ExpectRule(With(ncclep, {"--expert-model-parallel-size=1"}), "moe-flex-ncclep",
             "NCCL EP dispatcher requires TPxEP > 1");
  ExpectRule(ncclep, "moe-flex-ncclep", "requires moe_expert_rank_capacity_factor");
  EXPECT_EQ(Check(With(ncclep, {"--moe-expert-rank-capacity-factor=2"})).code(),
            absl::StatusCode::kUnimplemented);
  // HybridEP pads to capacity and runs on one rank.
  EXPECT_TRUE(Check(With(flex, {"--moe-flex-dispatcher-backend=hybridep",
                                "--expert-model-parallel-size=1"}))
                  .ok());
}

TEST(MegatronArgumentChecksTest, FlagsOutsideTheReplayAreUnimplemented) {
  EXPECT_EQ(Check(With(Good(), {"--decoder-first-pipeline-num-layers=15"})).code(),
            absl::StatusCode::kUnimplemented);
  EXPECT_EQ(Check(With(GoodMoe(), {"--moe-router-padding-for-quantization"})).code(),
            absl::StatusCode::kUnimplemented);
  EXPECT_EQ(Check(With(GoodMoe(), {"--moe-layer-freq=([1]*48)"})).code(),
            absl::StatusCode::kUnimplemented);
  EXPECT_EQ(Check(With(Good(), {"--optimizer=muon"})).code(), absl::StatusCode::kUnimplemented);
  EXPECT_TRUE(Check(With(Good(), {"--optimizer=adam"})).ok());
}

TEST(MegatronArgumentChecksTest, AMixtureOfExpertsListPassesAndSaysWhatMegatronMakesOfIt) {
  absl::StatusOr<MegatronLaunch> launch =
      CheckMegatronArguments(GoodMoe(), kWorld, OneConnection());
  ASSERT_TRUE(launch.ok()) << launch.status();
  EXPECT_EQ(launch->data_parallel, 4);
  EXPECT_EQ(launch->num_experts, 128);
  EXPECT_EQ(launch->expert_parallel, 8);
  EXPECT_EQ(launch->expert_tensor_parallel, 1);
  EXPECT_EQ(launch->expert_data_parallel, 1);  // 16 / (1 x 8 x 2)
  EXPECT_EQ(launch->moe_layers, std::vector<bool>(48, true));
  EXPECT_EQ(launch->moe_ffn_hidden_size, 768);
  EXPECT_EQ(launch->moe_shared_expert_intermediate_size, 0);
  EXPECT_EQ(launch->moe_router_topk, 8);
  EXPECT_EQ(launch->moe_router_score_function, "softmax");
  EXPECT_FALSE(launch->moe_router_pre_softmax);
  EXPECT_EQ(launch->moe_router_dtype, "fp32");
  EXPECT_TRUE(launch->moe_grouped_gemm);
  EXPECT_EQ(launch->moe_token_dispatcher_type, "alltoall");
  EXPECT_EQ(launch->moe_expert_capacity_factor, 0);
  EXPECT_EQ(launch->kv_channels, 128);
  // A dense model: no experts, the expert grid tp x 1 x dp x pp, heads h / a wide.
  launch = CheckMegatronArguments(Good(), kWorld, OneConnection());
  ASSERT_TRUE(launch.ok()) << launch.status();
  EXPECT_EQ(launch->num_experts, 0);
  EXPECT_TRUE(launch->moe_layers.empty());
  EXPECT_EQ(launch->expert_tensor_parallel, 2);
  EXPECT_EQ(launch->expert_data_parallel, 4);
  EXPECT_EQ(launch->kv_channels, 128);  // 4096 / 32
}

TEST(MegatronArgumentChecksTest, MixtureOfExpertsDefaults) {
  // etp is tp, the expert FFN width the dense one, routing top-2 softmax over all-gathered
  // tokens, every layer an MoE layer.
  absl::StatusOr<MegatronLaunch> launch = CheckMegatronArguments(
      With(Without(Without(Without(Without(Without(GoodMoe(), "--expert-tensor-parallel-size"),
                                           "--moe-ffn-hidden-size"),
                                   "--moe-router-topk"),
                           "--moe-token-dispatcher-type"),
                   "--moe-layer-freq"),
           {"--expert-model-parallel-size=4"}),
      kWorld, OneConnection());
  ASSERT_TRUE(launch.ok()) << launch.status();
  EXPECT_EQ(launch->expert_tensor_parallel, 2);
  EXPECT_EQ(launch->moe_ffn_hidden_size, 6144);
  EXPECT_EQ(launch->moe_router_topk, 2);
  EXPECT_EQ(launch->moe_token_dispatcher_type, "allgather");
  EXPECT_EQ(launch->moe_layers, std::vector<bool>(48, true));
  // An integer k: layers 0, k, 2k, ...
  launch = CheckMegatronArguments(With(GoodMoe(), {"--moe-layer-freq=4"}), kWorld, OneConnection());
  ASSERT_TRUE(launch.ok()) << launch.status();
  for (int layer = 0; layer < 48; ++layer) {
    EXPECT_EQ(launch->moe_layers[layer], layer % 4 == 0) << layer;
  }
  // --num-experts 0 is a dense model (which refuses an expert FFN width, as below); a negative
  // capacity factor is dropless.
  launch = CheckMegatronArguments(With(Without(GoodMoe(), "--moe-ffn-hidden-size"),
                                       {"--num-experts=0", "--expert-model-parallel-size=1"}),
                                  kWorld, OneConnection());
  ASSERT_TRUE(launch.ok()) << launch.status();
  EXPECT_EQ(launch->num_experts, 0);
  launch = CheckMegatronArguments(With(GoodMoe(), {"--moe-expert-capacity-factor=-1"}), kWorld,
                                  OneConnection());
  ASSERT_TRUE(launch.ok()) << launch.status();
  EXPECT_EQ(launch->moe_expert_capacity_factor, 0);
}

TEST(MegatronArgumentChecksTest, MixtureOfExpertsArgparse) {
  ExpectRule(With(GoodMoe(), {"--moe-layer-freq=[1,a]"}), "argparse",
             "invalid moe_freq_type value: '[1,a]'");
  ExpectRule(With(GoodMoe(), {"--moe-layer-freq=every"}), "argparse", "invalid moe_freq_type");
  ExpectRule(With(GoodMoe(), {"--moe-router-dtype=bf16"}), "argparse", "invalid choice: 'bf16'");
  ExpectRule(With(GoodMoe(), {"--moe-router-score-function=relu"}), "argparse", "invalid choice");
  ExpectRule(With(GoodMoe(), {"--moe-token-dispatcher-type=all_to_all"}), "argparse",
             "invalid choice");
  ExpectRule(With(GoodMoe(), {"--moe-aux-loss-coeff=high"}), "argparse", "invalid float value");
  ExpectRule(With(GoodMoe(), {"--moe-grouped-gemm=true"}), "argparse", "ignored explicit argument");
  std::vector<std::string> two_losses = GoodMoe();
  for (const char* element : {"--moe-router-load-balancing-type", "aux_loss", "seq_aux_loss",
                              "--moe-aux-loss-coeff", "1e-2", "1e-3"}) {
    two_losses.push_back(element);
  }
  EXPECT_TRUE(Check(two_losses).ok());
}

TEST(MegatronArgumentChecksTest, ExpertParallelism) {
  ExpectRule(With(Good(), {"--expert-model-parallel-size=2"}), "expert-model-parallel",
             "without --num-experts");
  ExpectRule(With(GoodMoe(), {"--expert-model-parallel-size=3"}), "expert-model-parallel",
             "Number of experts should be a multiple of expert model parallel_size "
             "(--num-experts 128, --expert-model-parallel-size 3)");
  // 1 x 16 x 2 ranks do not fit 16 GPUs; nor does a dense model's etp of 3.
  ExpectRule(With(GoodMoe(), {"--expert-model-parallel-size=16"}), "expert-world-size",
             "(1 x 16 x 2 = 32)");
  ExpectRule(With(Good(), {"--expert-tensor-parallel-size=3"}), "expert-world-size",
             "(3 x 1 x 2 = 6)");
  ExpectRule(With(GoodMoe(), {"--expert-tensor-parallel-size=0"}), "expert-world-size",
             "must be >= 1");
  // etp unset is tp (2): 2 x 8 x 2 = 32.
  ExpectRule(Without(GoodMoe(), "--expert-tensor-parallel-size"), "expert-world-size",
             "(2 x 8 x 2 = 32)");
}

TEST(MegatronArgumentChecksTest, MixtureOfExpertsConfig) {
  ExpectRule(With(GoodMoe(), {"--num-experts=-4", "--expert-model-parallel-size=1"}), "num-experts",
             "must be non-negative (--num-experts -4)");
  ExpectRule(With(Good(), {"--moe-ffn-hidden-size=768"}), "moe-ffn-hidden-size",
             "num_moe_experts is None");
  // Ignored where --moe-layer-freq leaves dense layers.
  EXPECT_TRUE(Check(With(Good(), {"--moe-ffn-hidden-size=768", "--moe-layer-freq=2"})).ok());
  ExpectRule(With(GoodMoe(), {"--moe-shared-expert-intermediate-size=0"}),
             "moe-shared-expert-intermediate-size", "but got 0");
  absl::StatusOr<MegatronLaunch> launch = CheckMegatronArguments(
      With(GoodMoe(), {"--moe-shared-expert-intermediate-size=1536"}), kWorld, OneConnection());
  ASSERT_TRUE(launch.ok()) << launch.status();
  EXPECT_EQ(launch->moe_shared_expert_intermediate_size, 1536);
  ExpectRule(With(GoodMoe(), {"--moe-expert-capacity-factor=1.25",
                              "--moe-router-load-balancing-type=sinkhorn"}),
             "moe-expert-capacity-factor", "not sinkhorn");
  ExpectRule(With(GoodMoe(), {"--moe-pad-expert-input-to-capacity"}),
             "moe-pad-expert-input-to-capacity", "moe_expert_capacity_factor must be set");
  ExpectRule(
      With(GoodMoe(), {"--moe-pad-expert-input-to-capacity", "--moe-expert-capacity-factor=-1"}),
      "moe-pad-expert-input-to-capacity", "moe_expert_capacity_factor must be set");
  launch = CheckMegatronArguments(
      With(GoodMoe(), {"--moe-expert-capacity-factor=1.25", "--moe-pad-expert-input-to-capacity"}),
      kWorld, OneConnection());
  ASSERT_TRUE(launch.ok()) << launch.status();
  EXPECT_EQ(launch->moe_expert_capacity_factor, 1.25);
  EXPECT_TRUE(launch->moe_pad_expert_input_to_capacity);
}

TEST(MegatronArgumentChecksTest, MixtureOfExpertsAllToAllOverlap) {
  const std::vector<std::string> overlap = {"--overlap-moe-expert-parallel-comm",
                                            "--delay-wgrad-compute"};
  // GoodMoe runs pp 2 without interleaving and with full recompute.
  ExpectRule(With(GoodMoe(), overlap), "moe-a2a-overlap",
             "virtual_pipeline_model_parallel_size must be specified");
  const std::vector<std::string> interleaved =
      With(GoodMoe(), {"--num-layers-per-virtual-pipeline-stage=12"});
  ExpectRule(With(interleaved, overlap), "moe-a2a-overlap", "disable full recomputation");
  const std::vector<std::string> runs =
      Without(Without(Without(interleaved, "--recompute-granularity"), "--recompute-method"),
              "--recompute-num-layers");
  absl::StatusOr<MegatronLaunch> launch =
      CheckMegatronArguments(With(runs, overlap), kWorld, OneConnection());
  ASSERT_TRUE(launch.ok()) << launch.status();
  EXPECT_TRUE(launch->moe_expert_parallel_overlap);
  ExpectRule(With(runs, {"--overlap-moe-expert-parallel-comm", "--expert-model-parallel-size=1"}),
             "moe-a2a-overlap", "only supported with expert model parallelism");
  ExpectRule(
      With(runs, {"--overlap-moe-expert-parallel-comm", "--moe-token-dispatcher-type=allgather"}),
      "moe-a2a-overlap", "alltoall/flex token dispatcher, not allgather");
  ExpectRule(With(runs, {"--delay-wgrad-compute"}), "moe-a2a-overlap",
             "overlap_moe_expert_parallel_comm must be enabled when enabling delay_wgrad_compute");
  ExpectRule(With(runs, {"--overlap-moe-expert-parallel-comm", "--moe-shared-expert-overlap"}),
             "moe-a2a-overlap", "disable moe_shared_expert_overlap");
}

TEST(MegatronArgumentChecksTest, MixtureOfExpertsSharedExpertOverlap) {
  const std::vector<std::string> shared = With(
      GoodMoe(), {"--moe-shared-expert-intermediate-size=1536", "--moe-shared-expert-overlap"});
  absl::StatusOr<MegatronLaunch> launch = CheckMegatronArguments(shared, kWorld, OneConnection());
  ASSERT_TRUE(launch.ok()) << launch.status();
  EXPECT_TRUE(launch->moe_shared_expert_overlap);
  ExpectRule(With(shared, {"--moe-token-dispatcher-type=allgather"}), "moe-shared-expert-overlap",
             "only works with alltoall or flex token dispatcher");
  // GoodMoe recomputes fully; selectively, the shared experts cannot be among the modules.
  const std::vector<std::string> selective =
      With(Without(Without(shared, "--recompute-method"), "--recompute-num-layers"),
           {"--recompute-granularity=selective"});
  EXPECT_TRUE(Check(With(selective, {"--recompute-modules", "core_attn", "moe_act"})).ok());
  ExpectRule(With(selective, {"--recompute-modules", "core_attn", "shared_experts"}),
             "moe-shared-expert-overlap", "shared_experts recompute cannot work");
  // Without shared experts TransformerConfig never reads it.
  launch = CheckMegatronArguments(With(GoodMoe(), {"--moe-shared-expert-overlap"}), kWorld,
                                  OneConnection());
  ASSERT_TRUE(launch.ok()) << launch.status();
  EXPECT_FALSE(launch->moe_shared_expert_overlap);
}

TEST(MegatronArgumentChecksTest, MixtureOfExpertsBiasAndTopOneRouting) {
  // Biased linears: only with etp 1.
  EXPECT_TRUE(Check(Without(GoodMoe(), "--disable-bias-linear")).ok());
  ExpectRule(With(Without(GoodMoe(), "--disable-bias-linear"),
                  {"--expert-tensor-parallel-size=2", "--expert-model-parallel-size=4"}),
             "moe-bias", "only supported when ETP==1 (--expert-tensor-parallel-size 2");
  ExpectRule(With(GoodMoe(), {"--moe-router-topk=1"}), "moe-router-pre-softmax",
             "--moe-router-pre-softmax when topk is 1");
  EXPECT_TRUE(Check(With(GoodMoe(), {"--moe-router-topk=1", "--moe-router-pre-softmax"})).ok());
  EXPECT_TRUE(
      Check(With(GoodMoe(), {"--moe-router-topk=1", "--moe-router-score-function=sigmoid"})).ok());
  EXPECT_TRUE(
      Check(With(GoodMoe(), {"--moe-router-topk=1", "--moe-router-load-balancing-type=sinkhorn"}))
          .ok());
}

TEST(MegatronArgumentChecksTest, MixtureOfExpertsModelBuild) {
  std::vector<std::string> pattern(47, "1");
  ExpectRule(
      With(GoodMoe(), {absl::StrCat("--moe-layer-freq=[", absl::StrJoin(pattern, ","), "]")}),
      "moe-layer-freq", "Invalid length of moe_layer_pattern: 47, expected 48");
  pattern.push_back("2");
  ExpectRule(
      With(GoodMoe(), {absl::StrCat("--moe-layer-freq=[", absl::StrJoin(pattern, ","), "]")}),
      "moe-layer-freq", "element 2");
  ExpectRule(With(GoodMoe(), {"--moe-layer-freq=0"}), "moe-layer-freq", "modulo by zero");
  // 1004 does not split over 8 expert tensor-parallel ranks (8 x 1 x 2 = 16 GPUs).
  ExpectRule(With(GoodMoe(), {"--moe-ffn-hidden-size=1004", "--expert-tensor-parallel-size=8",
                              "--expert-model-parallel-size=1"}),
             "expert-tensor-parallel-ffn",
             "--moe-ffn-hidden-size (1004) is not divisible by --expert-tensor-parallel-size (8)");
}

TEST(MegatronArgumentChecksTest, MixtureOfExpertsFirstStep) {
  ExpectRule(Without(GoodMoe(), "--sequence-parallel"), "moe-sequence-parallel",
             "(--tensor-model-parallel-size 2 without --sequence-parallel)");
  // tp 1: no tensor-parallel group to speak of.
  EXPECT_TRUE(Check(With(Without(GoodMoe(), "--sequence-parallel"),
                         {"--tensor-model-parallel-size=1", "--global-batch-size=1024"}))
                  .ok());
  ExpectRule(With(GoodMoe(), {"--moe-router-topk=0"}), "moe-router-topk", "(0) must be in [1,");
  ExpectRule(With(GoodMoe(), {"--moe-router-topk=129"}), "moe-router-topk",
             "(129) must be in [1, --num-experts (128)]");
}

// A plan of global batch 1024 at sequence 8192 whose every candidate is exported and checked
// (issue 13's "Must show").
struct PlanCase {
  const char* label;
  const char* preset;
  const char* gpu;
  int64_t nodes;
  int64_t gpus_per_node;
  bool wide;  // virtual pipeline 1 and 2, every recompute mode, uneven stages
  v1::Precision precision;
  bool fp32_gradients;
  bool distributed_optimizer;
  bool tp_cp_across_nodes = false;  // with `wide`
  // The training switches of the search.
  bool fp8_param_gather = false;
  bool tp_comm_overlap = false;
  v1::CpCommType cp_comm_type = v1::CP_COMM_TYPE_UNSPECIFIED;
};

v1::SearchSpec Spec(const PlanCase& plan) {
  v1::SearchSpec spec;
  spec.mutable_model()->set_preset(plan.preset);
  spec.mutable_training()->set_global_batch_size(1024);
  spec.mutable_training()->set_seq_len(8192);
  spec.mutable_training()->set_precision(plan.precision);
  spec.mutable_training()->set_fp32_gradients(plan.fp32_gradients);
  spec.mutable_training()->set_distributed_optimizer(plan.distributed_optimizer);
  spec.mutable_training()->set_fp8_param_gather(plan.fp8_param_gather);
  spec.mutable_training()->set_tp_comm_overlap(plan.tp_comm_overlap);
  spec.mutable_training()->set_cp_comm_type(plan.cp_comm_type);
  spec.mutable_cluster()->mutable_gpu()->set_type(plan.gpu);
  spec.mutable_cluster()->set_num_nodes(plan.nodes);
  spec.mutable_cluster()->set_gpus_per_node(plan.gpus_per_node);
  if (plan.wide) {
    v1::SearchSpace& space = *spec.mutable_space();
    space.set_allow_uneven_pipeline_stages(true);
    space.add_virtual_pipeline_sizes(1);
    space.add_virtual_pipeline_sizes(2);
    space.add_recompute_modes(v1::RECOMPUTE_NONE);
    space.add_recompute_modes(v1::RECOMPUTE_SELECTIVE);
    space.add_recompute_modes(v1::RECOMPUTE_FULL);
    space.set_allow_tp_cp_across_nodes(plan.tp_cp_across_nodes);
  }
  return spec;
}

std::string RecomputeGranularity(v1::Recompute recompute) {
  switch (recompute) {
    case v1::RECOMPUTE_SELECTIVE:
      return "selective";
    case v1::RECOMPUTE_FULL:
      return "full";
    default:
      return "";
  }
}

TEST(MegatronArgumentChecksTest, EveryExportedCandidateOfThePlansPasses) {
  const PlanCase plans[] = {
      // The demo's three search sizes, as `paratune submit` plans them by default.
      {"8B 4x4 H100-94GB", "llama3.1-8b", "h100-94gb", 4, 4, false, v1::BF16, true, true},
      {"70B 8x8 H100-80GB", "llama3.1-70b", "h100-80gb", 8, 8, false, v1::BF16, true, true},
      {"405B 128x8 H100-80GB", "llama3.1-405b", "h100-80gb", 128, 8, false, v1::BF16, true, true},
      // The same with interleaving, every recompute mode and uneven stages.
      {"8B wide, no dist. optimizer", "llama3.1-8b", "h100-94gb", 4, 4, true, v1::BF16, true,
       false},
      {"70B wide", "llama3.1-70b", "h100-80gb", 8, 8, true, v1::BF16, true, true},
      {"405B wide, bf16 gradients", "llama3.1-405b", "h100-80gb", 128, 8, true, v1::BF16, false,
       true},
      {"405B wide, tp x cp across nodes", "llama3.1-405b", "h100-80gb", 128, 8, true, v1::BF16,
       true, true, true},
      // fp8.
      {"70B fp8 wide, bf16 gradients", "llama3.1-70b", "h100-80gb", 8, 8, true, v1::FP8, false,
       true},
      // The training switches: each on, with the ring and with the all-gather.
      {"8B wide, TP overlap, cp p2p", "llama3.1-8b", "h100-94gb", 4, 4, true, v1::BF16, true, true,
       false, false, true, v1::CP_COMM_TYPE_P2P},
      {"8B wide, cp all_gather", "llama3.1-8b", "h100-94gb", 4, 4, true, v1::BF16, true, true,
       false, false, false, v1::CP_COMM_TYPE_ALL_GATHER},
      {"70B fp8 wide, fp8 params, TP overlap, cp all_gather", "llama3.1-70b", "h100-80gb", 8, 8,
       true, v1::FP8, false, true, false, true, true, v1::CP_COMM_TYPE_ALL_GATHER},
      // Mixture of experts (issue 26): every ep the planner searches.
      {"Qwen3-30B-A3B 2x8 wide", "qwen3-30b-a3b", "h100-80gb", 2, 8, true, v1::BF16, true, true},
      {"Mixtral 8x7B 4x8 fp8", "mixtral-8x7b", "h100-80gb", 4, 8, false, v1::FP8, false, true},
  };
  std::printf(
      "| plan | candidates | checked | interleaved | uneven |\n|---|---:|---:|---:|---:|\n");
  int64_t uneven_interleaved = 0;
  int64_t fp8_checked = 0;
  int64_t tp_overlapped = 0;
  int64_t all_gathered = 0;
  int64_t moe_checked = 0;
  for (const PlanCase& plan : plans) {
    SCOPED_TRACE(plan.label);
    v1::PlanRequest request;
    *request.mutable_spec() = Spec(plan);
    request.set_limit(0);  // every candidate
    absl::StatusOr<v1::PlanResponse> response = AnswerPlan(request);
    ASSERT_TRUE(response.ok()) << response.status();
    v1::Search search;
    search.set_name("searches/13");
    *search.mutable_spec() = request.spec();
    const int64_t world = plan.nodes * plan.gpus_per_node;
    absl::StatusOr<ModelSpec> model = FindModelPreset(plan.preset);
    ASSERT_TRUE(model.ok()) << model.status();
    int64_t interleaved = 0;
    int64_t uneven = 0;
    for (int i = 0; i < response->candidates_size(); ++i) {
      v1::Candidate candidate = response->candidates(i);
      candidate.set_name(absl::StrCat(search.name(), "/candidates/", i + 1));
      const v1::ParallelConfig& config = candidate.config();
      absl::StatusOr<std::vector<std::string>> arguments =
          ExportArguments(search, candidate, ExportFormat::kMegatron);
      ASSERT_TRUE(arguments.ok()) << arguments.status();
      SCOPED_TRACE(absl::StrCat(config.ShortDebugString(), "\n", absl::StrJoin(*arguments, " ")));
      absl::StatusOr<std::map<std::string, std::string>> environment =
          ExportEnvironment(search, candidate, ExportFormat::kMegatron);
      ASSERT_TRUE(environment.ok()) << environment.status();
      absl::StatusOr<MegatronLaunch> launch =
          CheckMegatronArguments(*arguments, world, *environment);
      ASSERT_TRUE(launch.ok()) << launch.status();
      // Megatron-LM reads the configuration the candidate names.
      EXPECT_EQ(launch->data_parallel, config.data_parallel());
      EXPECT_EQ(launch->tensor_parallel, config.tensor_parallel());
      EXPECT_EQ(launch->pipeline_parallel, config.pipeline_parallel());
      EXPECT_EQ(launch->context_parallel, config.context_parallel());
      EXPECT_EQ(launch->virtual_pipeline, std::max<int64_t>(1, config.virtual_pipeline()));
      EXPECT_EQ(launch->micro_batch_size, config.micro_batch_size());
      EXPECT_EQ(launch->global_batch_size, request.spec().training().global_batch_size());
      EXPECT_EQ(launch->sequence_parallel,
                config.tensor_parallel() > 1 &&
                    (!config.has_sequence_parallel() || config.sequence_parallel()));
      EXPECT_EQ(launch->recompute_granularity, RecomputeGranularity(config.recompute()));
      EXPECT_EQ(launch->fp8_format.empty(), plan.precision != v1::FP8);
      EXPECT_TRUE(launch->bf16);
      EXPECT_EQ(launch->distributed_optimizer, plan.distributed_optimizer);
      EXPECT_EQ(launch->fp32_gradients, plan.fp32_gradients);
      EXPECT_TRUE(launch->overlap_grad_reduce);
      EXPECT_EQ(launch->overlap_param_gather, plan.distributed_optimizer);
      // The switches reach Megatron-LM as the search asked for them: a misspelled flag would
      // be passed over and leave its switch off, a misspelled cp comm type fails the check.
      EXPECT_EQ(launch->fp8_param_gather, plan.fp8_param_gather);
      EXPECT_EQ(launch->tp_comm_overlap, plan.tp_comm_overlap && launch->sequence_parallel);
      const bool all_gather =
          config.context_parallel() > 1 && plan.cp_comm_type == v1::CP_COMM_TYPE_ALL_GATHER;
      EXPECT_THAT(launch->cp_comm_types, ElementsAre(all_gather ? "all_gather" : "p2p"));
      // The experts and their factorization, as the candidate names them.
      EXPECT_EQ(launch->num_experts, model->moe().num_experts);
      EXPECT_EQ(launch->expert_parallel, std::max<int64_t>(1, config.expert_parallel()));
      EXPECT_EQ(launch->expert_tensor_parallel, config.expert_tensor_parallel() > 0
                                                    ? config.expert_tensor_parallel()
                                                    : config.tensor_parallel());
      EXPECT_EQ(launch->kv_channels, model->head_dim());
      if (model->is_moe()) {
        ++moe_checked;
        EXPECT_EQ(static_cast<int64_t>(launch->moe_layers.size()), model->num_layers());
        EXPECT_EQ(launch->moe_router_topk, model->moe().router_top_k);
        EXPECT_TRUE(launch->moe_grouped_gemm);
        EXPECT_EQ(launch->moe_token_dispatcher_type, "alltoall");
      }
      if (launch->tp_comm_overlap) ++tp_overlapped;
      if (all_gather) ++all_gathered;
      if (launch->virtual_pipeline > 1) ++interleaved;
      if (launch->uneven_pipeline) ++uneven;
      if (launch->virtual_pipeline > 1 && launch->uneven_pipeline) ++uneven_interleaved;
      if (plan.precision == v1::FP8) ++fp8_checked;
    }
    std::printf("| %s | %lld | %d | %lld | %lld |\n", plan.label,
                static_cast<long long>(response->counts().memory_safe()),
                response->candidates_size(), static_cast<long long>(interleaved),
                static_cast<long long>(uneven));
  }
  EXPECT_GT(uneven_interleaved, 0);
  EXPECT_GT(fp8_checked, 0);
  EXPECT_GT(tp_overlapped, 0);
  EXPECT_GT(all_gathered, 0);
  EXPECT_GT(moe_checked, 0);
}

// Every valid configuration of a grid over every MoE preset's own cluster, exported with the
// built-in template and checked: Megatron-LM reads the model, the experts, the routing and
// both factorizations the configuration names (issue 26, §4).
TEST(MegatronArgumentChecksTest, EveryMixtureOfExpertsExportOfTheGridPasses) {
  const struct {
    const char* preset;
    int64_t nodes;
  } presets[] = {{"mixtral-8x7b", 4},     {"mixtral-8x22b", 8}, {"qwen3-30b-a3b", 2},
                 {"qwen3-235b-a22b", 16}, {"llama4-scout", 4},  {"llama4-maverick", 16}};
  absl::StatusOr<BuiltinTemplate> megatron = FindBuiltinTemplate("megatron-llama");
  ASSERT_TRUE(megatron.ok()) << megatron.status();
  std::printf(
      "| preset | GPUs | checked | ep > 1 | etp != tp | interleaved | uneven |\n"
      "|---|---:|---:|---:|---:|---:|---:|\n");
  for (const auto& [preset, nodes] : presets) {
    SCOPED_TRACE(preset);
    absl::StatusOr<ModelSpec> model = FindModelPreset(preset);
    ASSERT_TRUE(model.ok()) << model.status();
    const int64_t world = nodes * kPresetExportGpusPerNode;
    int64_t checked = 0, expert_parallel = 0, folded = 0, interleaved = 0, uneven = 0;
    for (int64_t tp : {1, 2, 4, 8}) {
      for (int64_t pp : {1, 2, 4, 8}) {
        for (int64_t cp : {1, 2}) {
          for (int64_t ep : {1, 2, 4, 8, 16, 32, 64, 128}) {
            for (int64_t etp : {0, 1, 2, 4}) {
              for (int64_t vp : {1, 2}) {
                if (world % (tp * pp * cp) != 0) continue;
                ParallelDims dims = MakeParallelDims(world / (tp * pp * cp), tp, pp, cp, 1);
                dims.ep = ep;
                dims.etp = etp;
                dims.virtual_pipeline = vp;
                dims.recompute = vp == 2 ? Recompute::kFull : Recompute::kNone;
                // The routing switches in turn: the defaults, a capacity factor with the
                // all-gather dispatcher, separate expert GEMMs.
                TrainingOptions training = PresetExportTraining();
                const int routing = static_cast<int>(checked % 3);
                if (routing == 1) {
                  training.moe_capacity_factor = 1.25;
                  training.moe_token_dispatcher = TokenDispatcher::kAllGather;
                }
                training.moe_grouped_gemm = routing != 2;
                absl::StatusOr<LaunchValues> values =
                    PresetExportLaunchValues(preset, nodes, dims, training);
                if (!values.ok()) continue;  // a broken rule: the planner never proposes it
                absl::StatusOr<std::vector<std::string>> arguments =
                    megatron->launch.RenderFrameworkArguments(*values);
                ASSERT_TRUE(arguments.ok()) << arguments.status();
                SCOPED_TRACE(absl::StrJoin(*arguments, " "));
                absl::StatusOr<MegatronLaunch> launch = CheckMegatronArguments(
                    *arguments, world, megatron->launch.RenderFrameworkEnvironment(*values));
                ASSERT_TRUE(launch.ok()) << launch.status();
                const int64_t resolved_etp = etp == 0 ? tp : etp;
                EXPECT_EQ(launch->data_parallel, dims.dp);
                EXPECT_EQ(launch->tensor_parallel, tp);
                EXPECT_EQ(launch->pipeline_parallel, pp);
                EXPECT_EQ(launch->context_parallel, cp);
                EXPECT_EQ(launch->virtual_pipeline, vp);
                EXPECT_EQ(launch->sequence_parallel, tp > 1);
                EXPECT_EQ(launch->global_batch_size, kPresetExportGlobalBatch);
                EXPECT_EQ(launch->kv_channels, model->head_dim());
                EXPECT_EQ(launch->num_experts, model->moe().num_experts);
                EXPECT_EQ(launch->expert_parallel, ep);
                EXPECT_EQ(launch->expert_tensor_parallel, resolved_etp);
                EXPECT_EQ(launch->expert_data_parallel, world / (resolved_etp * ep * pp));
                ASSERT_EQ(static_cast<int64_t>(launch->moe_layers.size()), model->num_layers());
                for (int64_t layer = 0; layer < model->num_layers(); ++layer) {
                  EXPECT_EQ(launch->moe_layers[layer], model->IsMoeLayer(layer)) << layer;
                }
                EXPECT_EQ(launch->moe_ffn_hidden_size, model->moe().expert_ffn_hidden_size);
                EXPECT_EQ(
                    launch->moe_shared_expert_intermediate_size,
                    model->moe().num_shared_experts * model->moe().shared_expert_ffn_hidden_size);
                EXPECT_EQ(launch->moe_router_topk, model->moe().router_top_k);
                EXPECT_EQ(
                    launch->moe_router_score_function,
                    model->moe().router_score == RouterScore::kSigmoid ? "sigmoid" : "softmax");
                EXPECT_EQ(launch->moe_router_dtype, "fp32");
                EXPECT_EQ(launch->moe_grouped_gemm, training.moe_grouped_gemm);
                EXPECT_EQ(launch->moe_token_dispatcher_type,
                          TokenDispatcherName(training.moe_token_dispatcher));
                EXPECT_EQ(launch->moe_expert_capacity_factor, training.moe_capacity_factor);
                EXPECT_EQ(launch->moe_pad_expert_input_to_capacity,
                          training.moe_capacity_factor > 0);
                ++checked;
                if (ep > 1) ++expert_parallel;
                if (resolved_etp != tp) ++folded;
                if (vp > 1) ++interleaved;
                if (launch->uneven_pipeline) ++uneven;
              }
            }
          }
        }
      }
    }
    std::printf("| %s | %lld | %lld | %lld | %lld | %lld | %lld |\n", preset,
                static_cast<long long>(world), static_cast<long long>(checked),
                static_cast<long long>(expert_parallel), static_cast<long long>(folded),
                static_cast<long long>(interleaved), static_cast<long long>(uneven));
    EXPECT_GT(expert_parallel, 0);
    EXPECT_GT(folded, 0);
  }
}

}  // namespace
}  // namespace paratune
