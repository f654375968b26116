// Every worker config file shipped in deploy/templates/ loads, builds its backends, and
// renders each of its launch templates for the probes of a real search, so that none of
// them rots. The shipped Megatron-LM, NeMo and TorchTitan launches are also checked flag by
// flag for a configuration that exercises every conditional argument.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "convert/spec_convert.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "launch/launch_template.h"
#include "launch/launch_values.h"
#include "launch/test_assignments.h"
#include "worker/command_backend.h"
#include "worker/replay_backend.h"
#include "worker/worker_config.h"

namespace paratune {
namespace {

using ::testing::Contains;
using ::testing::Not;

std::vector<std::string>& ConfigFiles() {
  static std::vector<std::string>* const files = new std::vector<std::string>();
  return *files;
}

// torchrun's rendezvous on the second member of TwoNodeGangAssignment's gang.
constexpr const char* kGangMemberRendezvous[] = {"torchrun",
                                                 "--nnodes=2",
                                                 "--node-rank=1",
                                                 "--nproc-per-node=8",
                                                 "--master-addr=gpu-node-0",
                                                 "--master-port=29500"};

// Llama-3.2-1B on one 8-GPU node as dp8 tp1 pp1 cp1 mbs1: the arguments' other branches.
v1::ProbeAssignment SingleNodeAssignment() {
  v1::ProbeAssignment assignment = TwoNodeGangAssignment(v1::RECOMPUTE_NONE);
  assignment.mutable_model()->set_preset("llama3.2-1b");
  assignment.mutable_cluster()->set_num_nodes(1);
  assignment.mutable_training()->set_fp32_gradients(false);
  v1::ParallelConfig& config = *assignment.mutable_config();
  config.set_data_parallel(8);
  config.set_tensor_parallel(1);
  config.set_pipeline_parallel(1);
  config.set_virtual_pipeline(1);
  assignment.set_num_ranks(8);
  assignment.mutable_gang()->RemoveLast();
  assignment.set_gang_index(0);
  return assignment;
}

// Every template of the shipped configs, rendered for `assignment`, by template name. A
// template that refuses the configuration (FAILED_PRECONDITION: torchtitan-llama's
// {torchtitan_flavor} has no value for a model TorchTitan has no flavor of) is left out, its
// error in `refusals` when given.
std::map<std::string, LaunchTemplate::Command> RenderAll(
    const v1::ProbeAssignment& assignment,
    std::map<std::string, absl::Status>* refusals = nullptr) {
  std::map<std::string, LaunchTemplate::Command> commands;
  absl::StatusOr<ResolvedConfiguration> specs = ResolveConfiguration(
      assignment.model(), assignment.training(), assignment.cluster(), assignment.config());
  EXPECT_TRUE(specs.ok()) << specs.status();
  if (!specs.ok()) return commands;
  for (const std::string& file : ConfigFiles()) {
    absl::StatusOr<v1::WorkerConfig> config = LoadWorkerConfig(file);
    if (!config.ok()) continue;  // reported by EveryConfigLoadsAndBuildsItsBackends
    for (int i = 0; i < config->command_templates_size(); ++i) {
      const v1::CommandTemplate& launch = config->command_templates(i);
      absl::StatusOr<LaunchTemplate> parsed =
          LaunchTemplate::Create(launch, absl::StrCat(file, ": command_templates[", i, "]"));
      absl::StatusOr<LaunchValues> values = LaunchValues::ForProbe(
          assignment, specs->model, specs->training, specs->config,
          specs->config.NumMicroBatches(specs->training), launch.extra_warmup_iterations(), 29500);
      EXPECT_TRUE(parsed.ok() && values.ok()) << parsed.status() << values.status();
      if (!parsed.ok() || !values.ok()) continue;
      absl::StatusOr<LaunchTemplate::Command> command = parsed->Render(*values);
      if (absl::IsFailedPrecondition(command.status())) {
        if (refusals != nullptr) (*refusals)[launch.name()] = command.status();
        continue;
      }
      EXPECT_TRUE(command.ok()) << file << ": " << command.status();
      if (command.ok()) commands[launch.name()] = *std::move(command);
    }
  }
  return commands;
}

TEST(ShippedConfigsTest, EveryConfigLoadsAndBuildsItsBackends) {
  ASSERT_FALSE(ConfigFiles().empty());
  for (const std::string& file : ConfigFiles()) {
    absl::StatusOr<v1::WorkerConfig> config = LoadWorkerConfig(file);
    ASSERT_TRUE(config.ok()) << config.status();
    EXPECT_TRUE(config->command_templates_size() > 0 || config->has_replay()) << file;
    if (config->command_templates_size() > 0) {
      absl::StatusOr<std::unique_ptr<CommandBackend>> command = CommandBackend::Create(*config);
      EXPECT_TRUE(command.ok()) << file << ": " << command.status();
    }
    if (config->has_replay()) {
      absl::StatusOr<std::unique_ptr<ReplayBackend>> replay =
          ReplayBackend::Create(config->replay(), ReplayBackend::Options());
      EXPECT_TRUE(replay.ok()) << file << ": " << replay.status();
    }
  }
}

TEST(ShippedConfigsTest, MegatronLaunchCarriesTheConfiguration) {
  std::map<std::string, LaunchTemplate::Command> gang =
      RenderAll(TwoNodeGangAssignment(v1::RECOMPUTE_FULL));
  ASSERT_EQ(gang.count("megatron-llama"), 1u);
  const std::vector<std::string>& argv = gang["megatron-llama"].argv;
  for (const char* expected : kGangMemberRendezvous) EXPECT_THAT(argv, Contains(expected));
  for (const char* expected : {"pretrain_gpt.py",
                               "--num-layers=80",
                               "--hidden-size=8192",
                               "--ffn-hidden-size=28672",
                               "--num-attention-heads=64",
                               "--num-query-groups=8",
                               "--seq-length=8192",
                               "--untie-embeddings-and-output-weights",
                               "--tensor-model-parallel-size=4",
                               "--pipeline-model-parallel-size=2",
                               "--context-parallel-size=1",
                               "--sequence-parallel",
                               "--num-layers-per-virtual-pipeline-stage=20",
                               "--recompute-granularity=full",
                               "--recompute-method=uniform",
                               "--recompute-num-layers=1",
                               "--micro-batch-size=1",
                               "--global-batch-size=64",
                               "--use-distributed-optimizer",
                               "--accumulate-allreduce-grads-in-fp32",
                               "--train-iters=7",
                               "--vocab-size=128256",
                               "--log-interval=1",
                               "--eval-iters=0",
                               "--mock-data",
                               "--bf16"}) {
    EXPECT_THAT(argv, Contains(expected));
  }
  EXPECT_THAT(argv, Not(Contains("--account-for-embedding-in-pipeline-split")));
  EXPECT_EQ(gang["megatron-llama"].env["CUDA_VISIBLE_DEVICES"], "0,1,2,3,4,5,6,7");

  std::map<std::string, LaunchTemplate::Command> single = RenderAll(SingleNodeAssignment());
  const std::vector<std::string>& plain = single["megatron-llama"].argv;
  EXPECT_THAT(plain, Contains("--grad-reduce-in-bf16"));
  for (const char* absent :
       {"--sequence-parallel", "--recompute-granularity=full",
        "--num-layers-per-virtual-pipeline-stage=20", "--accumulate-allreduce-grads-in-fp32"}) {
    EXPECT_THAT(plain, Not(Contains(absent)));
  }
  EXPECT_FALSE(std::any_of(plain.begin(), plain.end(), [](const std::string& a) {
    return absl::StartsWith(a, "--recompute") || absl::StartsWith(a, "--num-layers-per-virtual");
  }));
}

TEST(ShippedConfigsTest, NemoLaunchCarriesTheConfiguration) {
  std::map<std::string, LaunchTemplate::Command> gang =
      RenderAll(TwoNodeGangAssignment(v1::RECOMPUTE_SELECTIVE));
  ASSERT_EQ(gang.count("nemo-llama"), 1u);
  const std::vector<std::string>& argv = gang["nemo-llama"].argv;
  for (const char* expected : {"--node-rank=1",
                               "--no-python",
                               "nemo",
                               "llm",
                               "pretrain",
                               "llama31_8b",
                               "trainer.num_nodes=2",
                               "trainer.devices=8",
                               "trainer.max_steps=7",
                               "trainer.strategy.tensor_model_parallel_size=4",
                               "trainer.strategy.pipeline_model_parallel_size=2",
                               "trainer.strategy.context_parallel_size=1",
                               "trainer.strategy.sequence_parallel=True",
                               "trainer.strategy.virtual_pipeline_model_parallel_size=2",
                               "model.config.recompute_granularity=selective",
                               "data.micro_batch_size=1",
                               "data.global_batch_size=64",
                               "data.seq_length=8192",
                               "model.config.num_layers=80",
                               "model.config.num_query_groups=8"}) {
    EXPECT_THAT(argv, Contains(expected));
  }
  EXPECT_THAT(argv, Not(Contains("model.config.recompute_method=uniform")));
}

// Llama-3.1-70B on two nodes as dp2 tp4 pp2 (interleaved, 2 stages per rank) with full
// recompute: TorchTitan's 70B flavor, the pipeline's local batch and micro-batches, and the
// even split; Llama-3.2-1B, of which TorchTitan has no flavor, is refused saying so.
TEST(ShippedConfigsTest, TorchTitanLaunchCarriesTheConfiguration) {
  std::map<std::string, LaunchTemplate::Command> gang =
      RenderAll(TwoNodeGangAssignment(v1::RECOMPUTE_FULL));
  ASSERT_EQ(gang.count("torchtitan-llama"), 1u);
  const std::vector<std::string>& argv = gang["torchtitan-llama"].argv;
  for (const char* expected : kGangMemberRendezvous) EXPECT_THAT(argv, Contains(expected));
  for (const char* expected : {"--local-ranks-filter=0",
                               "-m",
                               "torchtitan.train",
                               "--model.name=llama3",
                               "--model.flavor=70B",
                               "--training.seq_len=8192",
                               "--training.global_batch_size=64",
                               "--training.local_batch_size=32",
                               "--parallelism.pipeline_parallel_microbatch_size=1",
                               "--parallelism.tensor_parallel_degree=4",
                               "--parallelism.context_parallel_degree=1",
                               "--parallelism.context_parallel_rotate_method=alltoall",
                               "--parallelism.pipeline_parallel_degree=2",
                               "--parallelism.pipeline_parallel_schedule=Interleaved1F1B",
                               "--parallelism.pipeline_parallel_layers_per_stage=20",
                               "--parallelism.pipeline_parallel_first_stage_less_layers=0",
                               "--parallelism.pipeline_parallel_last_stage_less_layers=0",
                               "--activation_checkpoint.mode=full",
                               "--training.mixed_precision_reduce=float32",
                               "--training.steps=8",
                               "--training.dataset=c4_test",
                               "--metrics.log_freq=1",
                               "--metrics.disable_color_printing"}) {
    EXPECT_THAT(argv, Contains(expected));
  }
  for (const char* absent : {"--training.local_batch_size=1", "--compile.enable",
                             "--model.converters=quantize.linear.float8",
                             "--activation_checkpoint.selective_ac_option=op"}) {
    EXPECT_THAT(argv, Not(Contains(absent)));
  }
  EXPECT_EQ(gang["torchtitan-llama"].env["PYTORCH_ALLOC_CONF"], "expandable_segments:True");

  std::map<std::string, absl::Status> refusals;
  EXPECT_EQ(RenderAll(SingleNodeAssignment(), &refusals).count("torchtitan-llama"), 0u);
  EXPECT_THAT(std::string(refusals["torchtitan-llama"].message()),
              ::testing::HasSubstr("model \"llama3.2-1b\" (h 2048, ffn 8192, L 16, a 32, kv 8, "
                                   "vocab 128256, tied embeddings) is none of TorchTitan "
                                   "v0.2.2's llama3 flavors"));
}

// Qwen3-30B-A3B (48 MoE layers of 128 experts, heads of 128) on the two nodes as dp8 tp1 pp2
// with ep8, dropless with grouped GEMMs and the all-to-all dispatcher (the defaults), then
// with a capacity factor, the all-gather dispatcher and one GEMM per expert.
TEST(ShippedConfigsTest, MixtureOfExpertsLaunchesCarryTheExperts) {
  v1::ProbeAssignment assignment = TwoNodeGangAssignment(v1::RECOMPUTE_NONE);
  assignment.mutable_model()->set_preset("qwen3-30b-a3b");
  v1::ParallelConfig& proto = *assignment.mutable_config();
  proto.set_data_parallel(8);
  proto.set_tensor_parallel(1);
  proto.set_virtual_pipeline(1);
  proto.set_expert_parallel(8);
  std::map<std::string, LaunchTemplate::Command> commands = RenderAll(assignment);

  const std::vector<std::string>& megatron = commands["megatron-llama"].argv;
  std::vector<std::string> every_layer(48, "1");
  for (const std::string& expected :
       {std::string("--num-experts=128"),
        absl::StrCat("--moe-layer-freq=[", absl::StrJoin(every_layer, ","), "]"),
        std::string("--moe-ffn-hidden-size=768"), std::string("--moe-router-topk=8"),
        std::string("--moe-router-score-function=softmax"), std::string("--moe-router-dtype=fp32"),
        std::string("--expert-model-parallel-size=8"),
        std::string("--expert-tensor-parallel-size=1"), std::string("--kv-channels=128"),
        std::string("--moe-grouped-gemm"), std::string("--moe-token-dispatcher-type=alltoall")}) {
    EXPECT_THAT(megatron, Contains(expected));
  }
  for (const char* absent : {"--moe-router-pre-softmax", "--sequence-parallel"}) {
    EXPECT_THAT(megatron, Not(Contains(absent)));
  }
  EXPECT_FALSE(std::any_of(megatron.begin(), megatron.end(), [](const std::string& a) {
    return absl::StartsWith(a, "--moe-shared-expert-intermediate-size") ||
           absl::StartsWith(a, "--moe-expert-capacity-factor");
  }));

  const std::vector<std::string>& nemo = commands["nemo-llama"].argv;
  for (const char* expected :
       {"trainer.strategy.expert_model_parallel_size=8",
        "trainer.strategy.expert_tensor_parallel_size=1", "model.config.num_moe_experts=128",
        "model.config.moe_ffn_hidden_size=768", "model.config.moe_router_topk=8",
        "model.config.moe_router_score_function=softmax", "model.config.moe_router_dtype=fp32",
        "model.config.kv_channels=128", "model.config.moe_grouped_gemm=True",
        "model.config.moe_token_dispatcher_type=alltoall"}) {
    EXPECT_THAT(nemo, Contains(expected));
  }

  v1::TrainingSpec& training = *assignment.mutable_training();
  training.set_moe_capacity_factor(1.25);
  training.set_moe_token_dispatcher(v1::MOE_TOKEN_DISPATCHER_ALLGATHER);
  training.set_moe_grouped_gemm(false);
  commands = RenderAll(assignment);
  const std::vector<std::string>& capped = commands["megatron-llama"].argv;
  for (const char* expected :
       {"--moe-token-dispatcher-type=allgather", "--moe-expert-capacity-factor=1.25",
        "--moe-pad-expert-input-to-capacity"}) {
    EXPECT_THAT(capped, Contains(expected));
  }
  EXPECT_THAT(capped, Not(Contains("--moe-grouped-gemm")));
  const std::vector<std::string>& capped_nemo = commands["nemo-llama"].argv;
  for (const char* expected : {"model.config.moe_token_dispatcher_type=allgather",
                               "model.config.moe_expert_capacity_factor=1.25",
                               "model.config.moe_pad_expert_input_to_capacity=True"}) {
    EXPECT_THAT(capped_nemo, Contains(expected));
  }
  EXPECT_THAT(capped_nemo, Not(Contains("model.config.moe_grouped_gemm=True")));
}

}  // namespace
}  // namespace paratune

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  for (int i = 1; i < argc; ++i) paratune::ConfigFiles().push_back(argv[i]);
  return RUN_ALL_TESTS();
}
