#include "launch/launch_template.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "launch/test_assignments.h"

namespace paratune {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

v1::CommandTemplate Template(std::vector<std::string> argv) {
  v1::CommandTemplate launch;
  launch.set_name("t");
  for (std::string& element : argv) launch.add_argv(std::move(element));
  return launch;
}

// Llama-3.2-1B on one 8-GPU worker as dp2 tp2 pp2 cp1, 1 warm-up and 4 timed steps.
v1::ProbeAssignment Assignment(int64_t tp = 2, v1::Recompute recompute = v1::RECOMPUTE_NONE) {
  v1::ProbeAssignment assignment;
  assignment.set_name("searches/1/candidates/0/probes/1");
  assignment.mutable_model()->set_preset("llama3.2-1b");
  assignment.mutable_training()->set_global_batch_size(64);
  assignment.mutable_training()->set_seq_len(2048);
  assignment.mutable_cluster()->mutable_gpu()->set_type("h100-80gb");
  assignment.mutable_cluster()->set_num_nodes(1);
  assignment.mutable_cluster()->set_gpus_per_node(8);
  v1::ParallelConfig& config = *assignment.mutable_config();
  config.set_data_parallel(8 / (tp * 2));
  config.set_tensor_parallel(tp);
  config.set_pipeline_parallel(2);
  config.set_context_parallel(1);
  config.set_micro_batch_size(1);
  config.set_recompute(recompute);
  assignment.set_scope(v1::PROBE_SCOPE_FULL);
  assignment.set_warmup_steps(1);
  assignment.set_timed_steps(4);
  assignment.set_num_ranks(8);
  v1::GangMember& member = *assignment.add_gang();
  member.set_hostname("localhost");
  member.set_num_ranks(8);
  for (int g = 0; g < 8; ++g) assignment.add_gpu_indices(g);
  return assignment;
}

LaunchValues Values(int64_t tp = 2, v1::Recompute recompute = v1::RECOMPUTE_NONE) {
  absl::StatusOr<LaunchValues> values =
      ProbeLaunchValues(Assignment(tp, recompute), 0, 0, /*master_port=*/6000);
  EXPECT_TRUE(values.ok()) << values.status();
  return *std::move(values);
}

// The export of Assignment()'s configuration.
LaunchValues ExportValues() {
  absl::StatusOr<LaunchValues> values = ExportLaunchValues(Assignment());
  EXPECT_TRUE(values.ok()) << values.status();
  return *std::move(values);
}

LaunchTemplate::Command Render(const v1::CommandTemplate& launch, const LaunchValues& values) {
  absl::StatusOr<LaunchTemplate> parsed = LaunchTemplate::Create(launch, "command_templates[0]");
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  if (!parsed.ok()) return {};
  absl::StatusOr<LaunchTemplate::Command> command = parsed->Render(values);
  EXPECT_TRUE(command.ok()) << command.status();
  return command.ok() ? *command : LaunchTemplate::Command();
}

v1::CommandTemplate FrameworkTemplate(std::vector<std::string> argv, const std::string& entry) {
  v1::CommandTemplate launch = Template(std::move(argv));
  launch.set_framework_entry(entry);
  return launch;
}

TEST(LaunchTemplateTest, PlaceholdersAreFilledInsideArguments) {
  const LaunchTemplate::Command command =
      Render(Template({"torchrun", "--nproc-per-node={nproc_per_node}", "--tp", "{tp}",
                       "--sizes={tp}x{pp}x{cp}", "{{literal}}"}),
             Values());
  EXPECT_THAT(command.argv, ElementsAre("torchrun", "--nproc-per-node=8", "--tp", "2",
                                        "--sizes=2x2x1", "{literal}"));
}

TEST(LaunchTemplateTest, ConditionalArgumentsArePassedOnlyWhenTheirConditionHolds) {
  const v1::CommandTemplate launch =
      Template({"train", "{?sequence_parallel=true}--sequence-parallel",
                "{?recompute!=none}--recompute-granularity={recompute}",
                "{?recompute=full}--recompute-method=uniform", "--end"});
  EXPECT_THAT(Render(launch, Values(2)).argv, ElementsAre("train", "--sequence-parallel", "--end"));
  EXPECT_THAT(
      Render(launch, Values(1, v1::RECOMPUTE_FULL)).argv,
      ElementsAre("train", "--recompute-granularity=full", "--recompute-method=uniform", "--end"));
  EXPECT_THAT(
      Render(launch, Values(2, v1::RECOMPUTE_SELECTIVE)).argv,
      ElementsAre("train", "--sequence-parallel", "--recompute-granularity=selective", "--end"));
}

TEST(LaunchTemplateTest, EnvironmentValuesAreTemplates) {
  v1::CommandTemplate launch = Template({"train"});
  (*launch.mutable_env())["CUDA_VISIBLE_DEVICES"] = "{gpu_ids}";
  (*launch.mutable_env())["MASTER"] = "{master_addr}:{master_port}";
  EXPECT_THAT(Render(launch, Values()).env,
              UnorderedElementsAre(Pair("CUDA_VISIBLE_DEVICES", "0,1,2,3,4,5,6,7"),
                                   Pair("MASTER", "localhost:6000")));
}

TEST(LaunchTemplateTest, UsesSaysWhetherAPlaceholderIsPassed) {
  v1::CommandTemplate launch =
      Template({"train", "--gbs={gbs}", "{?recompute=full}--recompute={recompute}",
                "{?tp=2}--sequence-parallel", "{{train_iters}}"});
  (*launch.mutable_env())["MASTER"] = "{master_addr}:{master_port}";
  absl::StatusOr<LaunchTemplate> parsed = LaunchTemplate::Create(launch, "command_templates[0]");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_TRUE(parsed->Uses("gbs"));
  EXPECT_TRUE(parsed->Uses("recompute"));     // in a conditional element's text
  EXPECT_TRUE(parsed->Uses("master_port"));   // in the environment
  EXPECT_FALSE(parsed->Uses("tp"));           // only in a condition
  EXPECT_FALSE(parsed->Uses("train_iters"));  // literal braces
  EXPECT_FALSE(parsed->Uses("{gbs}"));
}

TEST(LaunchTemplateTest, MentionsCountsConditionsToo) {
  v1::CommandTemplate launch =
      Template({"train", "--gbs={gbs}", "{?tp=2}--sequence-parallel", "{{train_iters}}"});
  (*launch.mutable_env())["MASTER"] = "{master_addr}";
  absl::StatusOr<LaunchTemplate> parsed = LaunchTemplate::Create(launch, "command_templates[0]");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_TRUE(parsed->Mentions("gbs"));
  EXPECT_TRUE(parsed->Mentions("tp"));  // only in a condition
  EXPECT_TRUE(parsed->Mentions("master_addr"));
  EXPECT_FALSE(parsed->Mentions("train_iters"));  // literal braces
  EXPECT_FALSE(parsed->Mentions("cp"));
}

TEST(LaunchTemplateTest, AShardingIsStatedOnlyByTheTemplatesThatMentionIt) {
  v1::ProbeAssignment assignment = Assignment(/*tp=*/1);  // dp4
  const auto unstated = [&assignment](std::vector<std::string> argv) {
    absl::StatusOr<LaunchTemplate> parsed =
        LaunchTemplate::Create(Template(std::move(argv)), "command_templates[0]");
    absl::StatusOr<LaunchValues> values = ExportLaunchValues(assignment);
    EXPECT_TRUE(parsed.ok() && values.ok());
    return FindUnstatedSharding(*parsed, *values);
  };
  const std::vector<std::string> optimizer = {
      "train", "{?distributed_optimizer=true}--use-distributed-optimizer"};
  EXPECT_EQ(unstated(optimizer), UnstatedSharding::kNone);
  assignment.mutable_config()->set_dp_sharding(v1::DP_SHARDING_GRADIENTS);
  EXPECT_EQ(unstated(optimizer), UnstatedSharding::kShardedGradients);
  EXPECT_EQ(unstated({"train", "{?dp_sharding=gradients}--fsdp"}), UnstatedSharding::kNone);
  // A template that states no sharding leaves it to the framework (TorchTitan's FSDP).
  EXPECT_EQ(unstated({"train"}), UnstatedSharding::kNone);
  // Two replicas of groups of two: {dp_replicate} or {distributed_optimizer_instances}.
  assignment.mutable_config()->set_dp_shard_group(2);
  EXPECT_EQ(unstated({"train", "--sharding={dp_sharding}"}), UnstatedSharding::kHybridReplicas);
  EXPECT_EQ(unstated({"train", "--sharding={dp_sharding}", "--replicas={dp_replicate}"}),
            UnstatedSharding::kNone);
  EXPECT_EQ(unstated({"train", "--sharding={dp_sharding}",
                      "{?distributed_optimizer_instances!=1}--instances=2"}),
            UnstatedSharding::kNone);
  // Without sharding every rank is a replica of nothing sharded: nothing to state.
  assignment.mutable_config()->set_dp_shard_group(0);
  assignment.mutable_config()->set_dp_sharding(v1::DP_SHARDING_NONE);
  EXPECT_EQ(unstated({"train"}), UnstatedSharding::kNone);
}

TEST(LaunchTemplateTest, FrameworkArgumentsFollowTheEntryWithoutProbeOnlyElements) {
  const v1::CommandTemplate launch =
      FrameworkTemplate({"torchrun", "--master-port={master_port}", "train.py", "--tp={tp}",
                         "{?probe=true}--train-iters={train_iters}",
                         "{?sequence_parallel=true}--sequence-parallel", "--gbs={gbs}"},
                        "train.py");
  absl::StatusOr<LaunchTemplate> parsed = LaunchTemplate::Create(launch, "command_templates[0]");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_THAT(*parsed->RenderFrameworkArguments(Values()),
              ElementsAre("--tp=2", "--train-iters=5", "--sequence-parallel", "--gbs=64"));
  EXPECT_THAT(*parsed->RenderFrameworkArguments(ExportValues()),
              ElementsAre("--tp=2", "--sequence-parallel", "--gbs=64"));
  // The whole command needs the rendezvous, which an export has not.
  EXPECT_EQ(parsed->Render(ExportValues()).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(LaunchTemplateTest, AnExportsEnvironmentLeavesOutWhatOnlyAProbeHas) {
  v1::CommandTemplate launch = FrameworkTemplate({"torchrun", "train.py", "--tp={tp}"}, "train.py");
  (*launch.mutable_env())["CUDA_VISIBLE_DEVICES"] = "{gpu_ids}";
  (*launch.mutable_env())["CUDA_DEVICE_MAX_CONNECTIONS"] = "1";
  (*launch.mutable_env())["TP"] = "tp{tp}";
  absl::StatusOr<LaunchTemplate> parsed = LaunchTemplate::Create(launch, "command_templates[0]");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_THAT(parsed->RenderFrameworkEnvironment(ExportValues()),
              ElementsAre(Pair("CUDA_DEVICE_MAX_CONNECTIONS", "1"), Pair("TP", "tp2")));
  EXPECT_THAT(parsed->RenderFrameworkEnvironment(Values()),
              ElementsAre(Pair("CUDA_DEVICE_MAX_CONNECTIONS", "1"),
                          Pair("CUDA_VISIBLE_DEVICES", "0,1,2,3,4,5,6,7"), Pair("TP", "tp2")));
}

TEST(LaunchTemplateTest, AnExportedElementCannotUseAProbesOwnPlaceholders) {
  absl::StatusOr<LaunchTemplate> parsed = LaunchTemplate::Create(
      FrameworkTemplate({"torchrun", "train.py", "--tp={tp}", "--iters={train_iters}"}, "train.py"),
      "command_templates[0]");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const absl::Status status = parsed->RenderFrameworkArguments(ExportValues()).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(),
              HasSubstr("command_templates[0].argv[3] (\"--iters={train_iters}\"): "
                        "{train_iters} has no value in an export"));
  parsed = LaunchTemplate::Create(Template({"torchrun", "train.py"}), "command_templates[0]");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->RenderFrameworkArguments(ExportValues()).status(),
            absl::FailedPreconditionError(
                "command_templates[0].framework_entry is empty: the template does not say where "
                "the framework's own arguments start"));
}

TEST(LaunchTemplateTest, BadTemplatesAreRejectedNamingTheFieldAndValue) {
  const struct {
    v1::CommandTemplate launch;
    const char* error;
  } cases[] = {
      {Template({}), "command_templates[0].argv (0 elements) must have 1 to 1024"},
      {Template({"train", "--tensor-model-parallel-size={tpp}"}),
       "command_templates[0].argv[1] (\"--tensor-model-parallel-size={tpp}\"): unknown "
       "placeholder {tpp}"},
      {Template({"train", "--x={tp"}),
       "command_templates[0].argv[1] (\"--x={tp\"): a '{' without its '}'"},
      {Template({"train", "--x=tp}"}),
       "command_templates[0].argv[1] (\"--x=tp}\"): a '}' without its '{'"},
      {Template({"{?tp=2}train"}),
       "command_templates[0].argv[0] (\"{?tp=2}train\"): the program cannot be conditional"},
      {Template({"train", "{?recompute=ful}--recompute-granularity=full"}),
       "{recompute} is none, selective or full, never \"ful\""},
      {Template({"train", "{?tpp=2}--x"}), "unknown placeholder {tpp} in the condition"},
      {Template({"train", "{?tp}--x"}), "a condition must read {?NAME=VALUE} or {?NAME!=VALUE}"},
      {Template({"train", "{?tp=2}"}), "a condition with nothing after it"},
      {Template({"train", std::string(5000, 'x')}), "longer than 4096 bytes"},
      {Template({"train", "{?probe=false}--data-path=/data"}),
       "command_templates[0].argv[1] (\"{?probe=false}--data-path=/data\"): an element passed "
       "outside probes only would be exported without ever being measured"},
      {Template({"train", "{?probe!=true}--x"}), "would be exported without ever being measured"},
      {FrameworkTemplate({"torchrun", "train.py", "--x"}, "pretrain.py"),
       "command_templates[0].framework_entry (\"pretrain.py\"): is no argv element"},
      {FrameworkTemplate({"torchrun", "train.py", "train.py"}, "train.py"),
       "command_templates[0].framework_entry (\"train.py\"): is argv[1] and argv[2]; it must "
       "name one element"},
      {FrameworkTemplate({"torchrun", "{?tp=2}train.py"}, "{?tp=2}train.py"),
       "names a conditional element"},
      {[] {
         v1::CommandTemplate launch = Template({"train"});
         launch.set_checked_against("Megatron-LM\n--evil");
         return launch;
       }(),
       "command_templates[0].checked_against (\"Megatron-LM\\n--evil\"): must be one line of at "
       "most 256 bytes"},
  };
  for (const auto& c : cases) {
    absl::StatusOr<LaunchTemplate> parsed =
        LaunchTemplate::Create(c.launch, "command_templates[0]");
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << c.error;
    EXPECT_THAT(parsed.status().message(), HasSubstr(c.error));
  }
}

TEST(LaunchTemplateTest, BadEnvironmentEntriesAreRejected) {
  v1::CommandTemplate launch = Template({"train"});
  (*launch.mutable_env())["1BAD"] = "x";
  EXPECT_THAT(LaunchTemplate::Create(launch, "command_templates[2]").status().message(),
              HasSubstr("command_templates[2].env[\"1BAD\"] (\"1BAD\"): a variable name is"));
  launch.mutable_env()->clear();
  (*launch.mutable_env())["X"] = "{?tp=1}y";
  EXPECT_THAT(LaunchTemplate::Create(launch, "command_templates[2]").status().message(),
              HasSubstr("conditions are only for argv elements"));
  launch.mutable_env()->clear();
  (*launch.mutable_env())["X"] = "{gpus}";
  EXPECT_THAT(LaunchTemplate::Create(launch, "command_templates[2]").status().message(),
              HasSubstr("command_templates[2].env[\"X\"] (\"{gpus}\"): unknown placeholder"));
}

TEST(LaunchTemplateTest, EnvironmentNamesValuesAndEntriesAreBounded) {
  v1::CommandTemplate launch = Template({"train"});
  (*launch.mutable_env())[""] = "x";
  EXPECT_THAT(LaunchTemplate::Create(launch, "command_templates[0]").status().message(),
              HasSubstr("command_templates[0].env[\"\"] (\"\"): a variable name is letters"));

  launch.mutable_env()->clear();
  (*launch.mutable_env())[std::string(257, 'N')] = "x";
  const absl::Status long_name = LaunchTemplate::Create(launch, "command_templates[0]").status();
  EXPECT_EQ(long_name.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(long_name.message(), HasSubstr("...\"] (\"NNNN"));
  EXPECT_THAT(long_name.message(), HasSubstr("a variable name is at most 256 bytes"));
  EXPECT_LT(long_name.message().size(), 400u);

  launch.mutable_env()->clear();
  (*launch.mutable_env())["X"] = std::string(4097, 'v');
  EXPECT_THAT(LaunchTemplate::Create(launch, "command_templates[0]").status().message(),
              HasSubstr("command_templates[0].env[\"X\"] (\"vvvv"));

  launch.mutable_env()->clear();
  for (int i = 0; i < 257; ++i) (*launch.mutable_env())[absl::StrCat("V", i)] = "x";
  EXPECT_EQ(LaunchTemplate::Create(launch, "command_templates[0]").status().message(),
            "command_templates[0].env (257 entries) must have at most 256");
  launch.mutable_env()->erase("V0");
  EXPECT_TRUE(LaunchTemplate::Create(launch, "command_templates[0]").ok());
}

}  // namespace
}  // namespace paratune
