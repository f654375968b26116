#include "cli/command_table.h"

#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cli/flag_fields.h"
#include "gmock/gmock.h"
#include "google/protobuf/dynamic_message.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

using ::google::protobuf::FieldDescriptor;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::StartsWith;

std::vector<const Command*> Commands() {
  std::vector<const Command*> commands;
  for (const CommandSection& section : ParatuneCommands().sections) {
    for (const Command& command : section.commands) commands.push_back(&command);
  }
  return commands;
}

struct Result {
  int status;
  std::string out;
  std::string err;
};

// `paratune args...` offline: no environment, no terminal.
Result Paratune(std::vector<const char*> args) {
  Surroundings surroundings;
  surroundings.environment = [](const char*) { return nullptr; };
  std::ostringstream out;
  std::ostringstream err;
  const int status =
      RunCommandLine(ParatuneCommands(), args, "paratune test", surroundings, out, err);
  return {status, out.str(), err.str()};
}

TEST(CommandTableTest, KeepsEveryFlagOfTheCommandLineAndNamesEachOnce) {
  // The 73 flags `paratune` had before its commands declared theirs, and those added since.
  const std::set<std::string> expected = {"model",
                                          "hidden_size",
                                          "ffn_hidden_size",
                                          "num_layers",
                                          "num_heads",
                                          "num_kv_heads",
                                          "vocab_size",
                                          "tied_embeddings",
                                          "head_dim",
                                          "num_experts",
                                          "moe_router_top_k",
                                          "moe_ffn_hidden_size",
                                          "num_shared_experts",
                                          "shared_expert_ffn_hidden_size",
                                          "moe_layer_step",
                                          "moe_first_dense_layers",
                                          "moe_router_score",
                                          "gpu",
                                          "nodes",
                                          "gpus_per_node",
                                          "global_batch",
                                          "seq_len",
                                          "fp8",
                                          "distributed_optimizer",
                                          "framework",
                                          "fp32_grads",
                                          "flash_attention",
                                          "fp8_param_gather",
                                          "tp_comm_overlap",
                                          "cp_comm_type",
                                          "moe_capacity_factor",
                                          "moe_token_dispatcher",
                                          "moe_grouped_gemm",
                                          "moe_expert_parallel_overlap",
                                          "moe_shared_expert_overlap",
                                          "torch_compile",
                                          "tp",
                                          "pp",
                                          "cp",
                                          "dp",
                                          "mbs",
                                          "vp",
                                          "recompute",
                                          "sequence_parallel",
                                          "ep",
                                          "etp",
                                          "safe_fraction",
                                          "micro_batches",
                                          "virtual_pipeline_sizes",
                                          "expert_parallel_sizes",
                                          "expert_tensor_parallel_sizes",
                                          "dp_sharding",
                                          "dp_shard_group",
                                          "dp_sharding_modes",
                                          "dp_shard_groups",
                                          "recompute_modes",
                                          "allow_tp_cp_across_nodes",
                                          "allow_uneven_pipeline",
                                          "memory_policy",
                                          "limit",
                                          "explain",
                                          "policy",
                                          "top_k",
                                          "tolerance",
                                          "max_in_flight",
                                          "confidence_sigmas",
                                          "max_confirmations",
                                          "confirmation_steps_factor",
                                          "max_probes",
                                          "max_gpu_hours",
                                          "deadline",
                                          "backend",
                                          "command_template",
                                          "scope",
                                          "warmup_steps",
                                          "timed_steps",
                                          "probe_deadline",
                                          "probe_startup",
                                          "max_attempts",
                                          "max_launch_failures",
                                          "seed",
                                          "name",
                                          "watch",
                                          "dry_run",
                                          "server",
                                          "tls_ca",
                                          "tls_cert",
                                          "tls_key",
                                          "token_file",
                                          "rpc_timeout",
                                          "watch_timeout",
                                          "page_size",
                                          "page_token",
                                          "json",
                                          "color",
                                          "format",
                                          "candidate",
                                          "require_workers"};
  ASSERT_EQ(expected.size(), 98u);
  absl::flat_hash_map<std::string, const Flag*> by_name;
  for (const Command* command : Commands()) {
    for (const FlagGroup& group : command->groups) {
      for (const FlagField& binding : group.flags) {
        const auto [it, inserted] = by_name.emplace(binding.flag->name, binding.flag);
        EXPECT_EQ(it->second, binding.flag) << "two flags called --" << binding.flag->name;
      }
    }
  }
  std::set<std::string> names;
  for (const auto& [name, flag] : by_name) names.insert(name);
  EXPECT_EQ(names, expected);
}

TEST(CommandTableTest, EveryDefaultIsAValueAndEveryFieldIsSetFromItsFlag) {
  for (const Command* command : Commands()) {
    std::vector<const Flag*> taken;
    std::set<const google::protobuf::Descriptor*> messages;
    for (const FlagGroup& group : command->groups) {
      if (group.message != nullptr) messages.insert(group.message());
      for (const FlagField& binding : group.flags) taken.push_back(binding.flag);
    }
    const absl::StatusOr<FlagValues> values =
        FlagValues::Create(taken, {}, [](const char*) { return nullptr; });
    ASSERT_TRUE(values.ok()) << command->name << ": " << values.status();
    google::protobuf::DynamicMessageFactory factory;
    for (const google::protobuf::Descriptor* message : messages) {
      std::unique_ptr<google::protobuf::Message> request(factory.GetPrototype(message)->New());
      EXPECT_TRUE(SetFlagFields(command->groups, *values, *request).ok())
          << command->name << " into " << message->full_name();
    }
  }
}

// Every word of a flag that sets an enum field stands for a value of that enum.
TEST(CommandTableTest, EveryChoiceIsAValueOfItsField) {
  for (const Command* command : Commands()) {
    for (const FlagGroup& group : command->groups) {
      for (const FlagField& binding : group.flags) {
        if (binding.field == nullptr) continue;
        const google::protobuf::Descriptor* message = group.message();
        const FieldDescriptor* field = nullptr;
        for (const absl::string_view name :
             absl::StrSplit(absl::StrCat(group.prefix, binding.field), '.')) {
          if (field != nullptr) message = field->message_type();
          field = message->FindFieldByName(std::string(name));
          ASSERT_NE(field, nullptr) << binding.field;
        }
        if (field->cpp_type() != FieldDescriptor::CPPTYPE_ENUM) continue;
        EXPECT_THAT(binding.flag->choices, testing::Not(IsEmpty())) << binding.flag->name;
        for (const FlagChoice& choice : binding.flag->choices) {
          EXPECT_NE(field->enum_type()->FindValueByNumber(choice.value), nullptr)
              << binding.flag->name << " " << choice.word;
        }
      }
    }
  }
}

TEST(CommandTableTest, ACommandRefusesTheFlagsOfOthers) {
  const Result list = Paratune({"list", "--tp=4"});
  EXPECT_EQ(list.status, 1);
  EXPECT_EQ(list.err,
            "paratune: INVALID_ARGUMENT: list does not take --tp (estimate and plan take it); "
            "'paratune help list' lists its flags\n");
  EXPECT_THAT(Paratune({"submit", "--dry_run", "--tp=4"}).err,
              HasSubstr("submit does not take --tp"));
  EXPECT_THAT(Paratune({"estimate", "--server=h:1"}).err,
              HasSubstr("estimate does not take --server"));
  EXPECT_THAT(Paratune({"export", "searches/1", "--json"}).err,
              HasSubstr("export does not take --json"));
}

TEST(CommandTableTest, HelpOfSubmitListsItsFlagsByGroup) {
  const Result help = Paratune({"help", "submit"});
  EXPECT_EQ(help.status, 0);
  EXPECT_THAT(help.out, StartsWith("Usage: paratune submit [flags]\n"));
  EXPECT_THAT(help.out, HasSubstr("\nModel:\n  --model=TEXT (default llama3.1-8b)\n"));
  EXPECT_THAT(help.out, HasSubstr("\nSearch policy:\n  --policy=adaptive|top_k|exhaustive (default "
                                  "adaptive)\n"));
  EXPECT_THAT(help.out, HasSubstr("  --tls_ca=TEXT (default $PARATUNE_TLS_CA)\n"));
  EXPECT_THAT(help.out, HasSubstr("  --[no]dry_run (default false)\n"));
  EXPECT_THAT(help.out, testing::Not(HasSubstr("--tp=")));
  EXPECT_THAT(help.out, testing::Not(HasSubstr("--limit")));
}

TEST(CommandTableTest, BadValuesAreNamedByTheirFlags) {
  const std::vector<std::pair<std::vector<const char*>, std::string>> cases = {
      {{"plan", "--safe_fraction=1.5"}, "--safe_fraction (1.5) must be in (0, 1]"},
      {{"estimate", "--safe_fraction=1.5"}, "--safe_fraction (1.5) must be in (0, 1]"},
      {{"plan", "--micro_batches=1,0"}, "--micro_batches[1] (0) must be in [1, 1024]"},
      {{"plan", "--limit=-1"}, "--limit (-1) must be >= 0"},
      {{"estimate", "--tp=3", "--gpus_per_node=3"},
       "--tp (3) does not divide model.num_attention_heads (32)"},
      {{"estimate", "--seq_len=0"}, "--seq_len (0) must be in [1, 4194304]"},
      {{"estimate", "--gpu=v100"}, "--gpu (\"v100\") is not a known GPU"},
      {{"submit", "--dry_run", "--max_gpu_hours=1e12"},
       "--max_gpu_hours, in GPU-seconds, (3.6e+15) must be in [0, 1e+12] (0: no limit)"},
      {{"submit", "--dry_run", "--deadline=-1h"},
       "--deadline, in seconds, (-3600) must be in [0, 3.1536e+07] (0: no limit)"},
      {{"submit", "--dry_run", "--fp8_param_gather"},
       "--fp8_param_gather (true) needs training.precision FP8, not BF16"},
      {{"submit", "--dry_run", "--recompute_modes=none,most"},
       "--recompute_modes[1] (\"most\") must be none, selective or full"},
      {{"submit", "--dry_run", "--nodes=0"}, "--nodes (0) must be in [1, 65536]"},
      {{"submit", "--dry_run", "--backend=command"},
       "--command_template (\"\") must be 1 to 64 letters, digits, '_', '-' or '.'"},
      {{"estimate", "--tp=two"}, "--tp (\"two\") is not an integer"},
      {{"estimate", "--ep=2"},
       "--ep (2) > 1 needs experts to split; model.moe.num_experts is 0 (a dense model)"},
      {{"estimate", "--tp=2", "--etp=4"}, "--etp (4) other than "},
      {{"estimate", "--ep=-1"}, "--ep (-1) must be >= 1"},
      {{"plan", "--model=mixtral-8x7b", "--expert_parallel_sizes=2,0"},
       "--expert_parallel_sizes[1] (0) must be in [1, 4096]"},
      {{"plan", "--expert_tensor_parallel_sizes=2"},
       "--expert_tensor_parallel_sizes is set, but model \"llama3.1-8b\" has no experts "
       "(model.moe.num_experts is 0)"},

      {{"estimate", "--num_experts=8"},
       "--num_experts (8) must be 0 when model.preset (\"llama3.1-8b\") is set"},
      {{"estimate", "--model=", "--hidden_size=4096", "--ffn_hidden_size=14336", "--num_layers=32",
        "--num_heads=32", "--num_kv_heads=8", "--vocab_size=32000", "--num_experts=8",
        "--moe_router_top_k=9", "--moe_ffn_hidden_size=14336"},
       "--moe_router_top_k (9) must be in [1, 8]"},
      {{"estimate", "--model=", "--hidden_size=4096", "--ffn_hidden_size=14336", "--num_layers=32",
        "--num_heads=32", "--num_kv_heads=8", "--vocab_size=32000", "--moe_router_score=sigmoid"},
       "--moe_router_score (MOE_ROUTER_SCORE_SIGMOID) must be unset when model.num_experts is "
       "0 (a dense model)"},
  };
  for (const auto& [args, message] : cases) {
    const Result result = Paratune(args);
    EXPECT_EQ(result.status, 1) << args[0] << " " << args[1];
    EXPECT_THAT(result.err, StartsWith(absl::StrCat("paratune: INVALID_ARGUMENT: ", message)))
        << args[0] << " " << args[1];
  }
}

TEST(CommandTableTest, MixtureOfExpertsModelsAreEstimatedAndPlanned) {
  const std::vector<std::vector<const char*>> commands = {
      {"estimate", "--model=mixtral-8x7b", "--tp=2", "--ep=4", "--seq_len=4096"},
      {"plan", "--model=qwen3-30b-a3b", "--nodes=2", "--seq_len=4096"},
      {"submit", "--dry_run", "--model=qwen3-30b-a3b", "--nodes=2", "--seq_len=4096"},
      {"estimate", "--model=", "--hidden_size=4096", "--ffn_hidden_size=14336", "--num_layers=32",
       "--num_heads=32", "--num_kv_heads=8", "--vocab_size=32000", "--num_experts=8",
       "--moe_router_top_k=2", "--moe_ffn_hidden_size=14336", "--tp=2", "--ep=4", "--seq_len=4096"},
  };
  for (const std::vector<const char*>& args : commands) {
    const Result result = Paratune(args);
    EXPECT_EQ(result.status, 0) << args[1] << ": " << result.err;
    EXPECT_THAT(result.out, Not(IsEmpty())) << args[1];
  }
  // The expert-parallel dispatch is its own line of the step.
  EXPECT_THAT(Paratune(commands[0]).out, HasSubstr("EP communication (exposed)"));
  // A routing switch out of range is named by its flag.
  EXPECT_THAT(
      Paratune({"estimate", "--model=mixtral-8x7b", "--tp=2", "--ep=4", "--moe_capacity_factor=-1"})
          .err,
      HasSubstr("--moe_capacity_factor (-1) must be 0 (dropless) or in (0, 1000]"));
}

TEST(CommandTableTest, SubmitIsValidatedBeforeItIsSent) {
  // No server listens on port 1: the error is the flag's, not the connection's.
  const Result result =
      Paratune({"submit", "--server=127.0.0.1:1", "--rpc_timeout=1s", "--timed_steps=20000"});
  EXPECT_EQ(result.status, 1);
  EXPECT_EQ(result.err,
            "paratune: INVALID_ARGUMENT: --timed_steps (20000) must be in [0, 10000]\n");
}

TEST(CommandTableTest, OfflineCommandsRunOnTheirDefaults) {
  const Result estimate = Paratune({"estimate", "--tp=2"});
  EXPECT_EQ(estimate.status, 0) << estimate.err;
  EXPECT_THAT(estimate.out, StartsWith("Configuration: dp4 tp2 pp1 cp1 mbs1\n"));
  const Result dry_run = Paratune({"submit", "--dry_run", "--policy=top_k", "--top_k=3"});
  EXPECT_EQ(dry_run.status, 0) << dry_run.err;
  EXPECT_THAT(dry_run.out,
              StartsWith("dry run, nothing sent to a server: a search with policy TOP_K"));
  const Result explain = Paratune({"plan", "--explain", "--tp=2", "--mbs=2"});
  EXPECT_EQ(explain.status, 0) << explain.err;
  EXPECT_THAT(explain.out, HasSubstr("dp4 tp2 pp1 cp1 mbs2"));
}

}  // namespace
}  // namespace paratune
