#include "cli/export.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "frameworks/megatron_argument_checks.h"
#include "frameworks/pinned_list.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "launch/builtin_templates.h"
#include "launch/launch_template.h"
#include "launch/test_assignments.h"

namespace paratune {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

v1::Candidate Candidate(int64_t n, int64_t tp, int64_t pp, int64_t v, v1::Recompute recompute,
                        double tflops) {
  v1::Candidate candidate;
  candidate.set_name(absl::StrCat("searches/3/candidates/", n));
  v1::ParallelConfig& config = *candidate.mutable_config();
  config.set_data_parallel(16 / (tp * pp));
  config.set_tensor_parallel(tp);
  config.set_pipeline_parallel(pp);
  config.set_context_parallel(1);
  config.set_micro_batch_size(2);
  config.set_virtual_pipeline(v);
  config.set_recompute(recompute);
  candidate.mutable_predicted()->set_model_tflops_per_gpu(500);
  if (tflops > 0) {
    candidate.set_state(v1::CANDIDATE_PROBED);
    candidate.mutable_probe_result()->set_outcome(v1::PROBE_OK);
    candidate.mutable_probe_result()->set_model_tflops_per_gpu(tflops);
    candidate.mutable_probe_result()->set_simulated(true);
    candidate.mutable_probe_result()->set_backend("sim");
  } else {
    candidate.set_state(v1::CANDIDATE_SKIPPED);
  }
  return candidate;
}

// Llama-3.1-8B on 4 x 4 GPUs, ranked: a skipped candidate first would be a ranking bug, so
// the best measured comes first as the scheduler ranks them.
v1::Search Search() {
  v1::Search search;
  search.set_name("searches/3");
  search.set_display_name("demo");
  search.set_state(v1::SUCCEEDED);
  v1::SearchSpec& spec = *search.mutable_spec();
  spec.mutable_model()->set_preset("llama3.1-8b");
  spec.mutable_training()->set_global_batch_size(1024);
  spec.mutable_training()->set_seq_len(8192);
  spec.mutable_cluster()->mutable_gpu()->set_type("h100-94gb");
  spec.mutable_cluster()->set_num_nodes(4);
  spec.mutable_cluster()->set_gpus_per_node(4);
  *search.add_candidates() = Candidate(5, 2, 2, 2, v1::RECOMPUTE_FULL, 610.5);
  *search.add_candidates() = Candidate(1, 4, 1, 1, v1::RECOMPUTE_NONE, 580);
  *search.add_candidates() = Candidate(2, 1, 1, 1, v1::RECOMPUTE_NONE, 0);
  return search;
}

// A candidate probed OK of dp x tp x pp x cp with micro-batch 1, `vp` virtual stages and
// `recompute`.
v1::Candidate ProbedCandidate(int64_t n, int64_t dp, int64_t tp, int64_t pp, int64_t cp, int64_t vp,
                              v1::Recompute recompute) {
  v1::Candidate candidate = Candidate(n, tp, pp, vp, recompute, 400);
  v1::ParallelConfig& config = *candidate.mutable_config();
  config.set_data_parallel(dp);
  config.set_context_parallel(cp);
  config.set_micro_batch_size(1);
  return candidate;
}

// `preset` with global batch `global_batch` of 8192 tokens on `nodes` x 8 H100-80GB.
v1::Search LargeSearch(const char* preset, int64_t global_batch, int64_t nodes,
                       v1::Candidate candidate) {
  v1::Search search = Search();
  v1::SearchSpec& spec = *search.mutable_spec();
  spec.mutable_model()->set_preset(preset);
  spec.mutable_training()->set_global_batch_size(global_batch);
  spec.mutable_cluster()->mutable_gpu()->set_type("h100-80gb");
  spec.mutable_cluster()->set_num_nodes(nodes);
  spec.mutable_cluster()->set_gpus_per_node(8);
  search.clear_candidates();
  *search.add_candidates() = std::move(candidate);
  return search;
}

// Llama-3.1-405B (126 layers) on 16 x 8 GPUs as dp2 tp8 pp8 vp2 with full recompute and bf16
// gradients: an uneven interleaved split, (126 + 2) / (8 x 2) = 8 layers per virtual stage.
v1::Search Search405B() {
  v1::Search search =
      LargeSearch("llama3.1-405b", 2048, 16, ProbedCandidate(7, 2, 8, 8, 1, 2, v1::RECOMPUTE_FULL));
  search.mutable_spec()->mutable_training()->set_fp32_gradients(false);
  return search;
}

TEST(ExportTest, MegatronArgumentsDescribeModelAndConfiguration) {
  const v1::Search search = Search();
  absl::StatusOr<std::string> text =
      ExportCandidate(search, search.candidates(0), ExportFormat::kMegatron);
  ASSERT_TRUE(text.ok()) << text.status();
  for (const char* expected : {"--tensor-model-parallel-size=2 \\\n",
                               "--pipeline-model-parallel-size=2",
                               "--context-parallel-size=1",
                               "--micro-batch-size=2",
                               "--global-batch-size=1024",
                               "--seq-length=8192",
                               "--num-layers=32",
                               "--hidden-size=4096",
                               "--ffn-hidden-size=14336",
                               "--num-attention-heads=32",
                               "--group-query-attention",
                               "--num-query-groups=8",
                               "--untie-embeddings-and-output-weights",
                               "--swiglu",
                               "--normalization=RMSNorm",
                               "--rotary-base=500000",
                               "--attention-dropout=0",
                               "--hidden-dropout=0",
                               "--num-layers-per-virtual-pipeline-stage=8",
                               "--sequence-parallel",
                               "--use-distributed-optimizer",
                               "--accumulate-allreduce-grads-in-fp32",
                               "--recompute-granularity=full",
                               "--recompute-method=uniform",
                               "--recompute-num-layers=1",
                               "--bf16"}) {
    EXPECT_THAT(*text, HasSubstr(expected));
  }
  EXPECT_THAT(*text, HasSubstr("610.5 TFLOP/s per GPU SIMULATED by sim"));
  EXPECT_THAT(*text, HasSubstr("# The arguments after pretrain_gpt.py of the built-in template "
                               "megatron-llama (deploy/templates/megatron_llama.textproto)"));
  absl::StatusOr<std::vector<std::string>> arguments =
      ExportArguments(search, search.candidates(0), ExportFormat::kMegatron);
  ASSERT_TRUE(arguments.ok()) << arguments.status();
  for (const char* absent : {"account-for-embedding", "--use-flash-attn", "--train-iters",
                             "--mock-data", "NullTokenizer", "--log-interval", "--eval-iters"}) {
    EXPECT_THAT(*arguments, Not(Contains(HasSubstr(absent))));
  }
}

TEST(ExportTest, ProvenanceSaysWhereTheProbeRanOnOneLine) {
  v1::Search search = Search();
  search.set_display_name("demo\nrm -rf ~");
  v1::Candidate candidate = search.candidates(0);
  v1::ProbeHost& host = *candidate.mutable_probe_result()->add_ran_on();
  host.set_worker("workers/3");
  host.set_hostname("node-1\necho injected");
  host.set_first_rank(0);
  host.set_num_ranks(16);
  host.set_gpu_type("h100-94gb");
  absl::StatusOr<std::string> text = ExportCandidate(search, candidate, ExportFormat::kMegatron);
  ASSERT_TRUE(text.ok());
  EXPECT_THAT(*text, HasSubstr("# Megatron-LM arguments for searches/3/candidates/5 of searches/3 "
                               "(demo rm -rf ~): predicted 500.0, 610.5 TFLOP/s per GPU SIMULATED "
                               "by sim, ran on workers/3 (node-1 echo injected, 16 x h100-94gb, "
                               "ranks 0-15); peak memory "));
  text = ExportCandidate(search, candidate, ExportFormat::kSbatch);
  ASSERT_TRUE(text.ok());
  EXPECT_THAT(*text, Not(HasSubstr("\necho injected")));
  EXPECT_THAT(*text, Not(HasSubstr("\nrm -rf")));
}

TEST(ExportTest, UnevenInterleavedSplitCountsTheEmbeddingAndTheLoss) {
  const v1::Search search = Search405B();
  absl::StatusOr<std::vector<std::string>> arguments =
      ExportArguments(search, search.candidates(0), ExportFormat::kMegatron);
  ASSERT_TRUE(arguments.ok()) << arguments.status();
  // (126 + 2) / (8 x 2): Megatron-LM rejects 7, which leaves out the embedding and the loss.
  EXPECT_THAT(*arguments, Contains("--num-layers-per-virtual-pipeline-stage=8"));
  EXPECT_THAT(*arguments, Contains("--account-for-embedding-in-pipeline-split"));
  EXPECT_THAT(*arguments, Contains("--account-for-loss-in-pipeline-split"));
  EXPECT_THAT(*arguments, Contains("--grad-reduce-in-bf16"));
  EXPECT_THAT(*arguments, Not(Contains("--accumulate-allreduce-grads-in-fp32")));
}

TEST(ExportTest, NemoOverrides) {
  const v1::Search search = Search();
  absl::StatusOr<std::string> text =
      ExportCandidate(search, search.candidates(1), ExportFormat::kNemo);
  ASSERT_TRUE(text.ok()) << text.status();
  for (const char* expected :
       {"# NeMo 2 recipe overrides for searches/3/candidates/1", "\ntrainer.num_nodes=4 \\\n",
        "trainer.devices=4", "trainer.strategy.tensor_model_parallel_size=4",
        "trainer.strategy.sequence_parallel=True", "data.micro_batch_size=2",
        "data.global_batch_size=1024", "data.seq_length=8192", "model.config.num_layers=32"}) {
    EXPECT_THAT(*text, HasSubstr(expected));
  }
  absl::StatusOr<std::vector<std::string>> arguments =
      ExportArguments(search, search.candidates(1), ExportFormat::kNemo);
  ASSERT_TRUE(arguments.ok()) << arguments.status();
  for (const char* absent :
       {"virtual_pipeline_model_parallel_size", "trainer.max_steps", "log.ckpt",
        "account_for_embedding", "align_param_gather", "p2p_comm", "data.tokenizer"}) {
    EXPECT_THAT(*arguments, Not(Contains(HasSubstr(absent))));
  }
}

TEST(ExportTest, ASearchProbedWithAnotherTemplateSaysSo) {
  v1::Search search = Search();
  search.mutable_spec()->mutable_probe()->set_backend("command");
  search.mutable_spec()->mutable_probe()->set_command_template("site-megatron");
  absl::StatusOr<std::string> text =
      ExportCandidate(search, search.candidates(0), ExportFormat::kMegatron);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_THAT(*text, HasSubstr("# searches/3 was probed with the workers' template "
                               "\"site-megatron\", not this one.\n"));
  search.mutable_spec()->mutable_probe()->set_command_template("megatron-llama");
  text = ExportCandidate(search, search.candidates(0), ExportFormat::kMegatron);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_THAT(*text, Not(HasSubstr("was probed with")));
}

TEST(ExportTest, AnInvalidConfigurationIsRejectedNamingIt) {
  const v1::Search search = Search();
  v1::Candidate candidate = search.candidates(0);
  candidate.mutable_config()->set_data_parallel(3);
  const absl::Status status = ExportCandidate(search, candidate, ExportFormat::kMegatron).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("config.data_parallel"));
}

TEST(ExportTest, JsonCarriesTheSpecAndOnlyTheChosenCandidate) {
  const v1::Search search = Search();
  absl::StatusOr<std::string> text =
      ExportCandidate(search, search.candidates(1), ExportFormat::kJson);
  ASSERT_TRUE(text.ok());
  v1::Search parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(*text, &parsed).ok());
  EXPECT_EQ(parsed.spec().model().preset(), "llama3.1-8b");
  ASSERT_EQ(parsed.candidates_size(), 1);
  EXPECT_EQ(parsed.candidates(0).name(), "searches/3/candidates/1");
}

TEST(ExportTest, MegatronArgumentsSayTheEnvironmentTheyNeed) {
  const v1::Search search = Search();
  absl::StatusOr<std::string> text =
      ExportCandidate(search, search.candidates(0), ExportFormat::kMegatron);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_THAT(*text, HasSubstr("# Run it with the environment the probe ran with: "
                               "CUDA_DEVICE_MAX_CONNECTIONS=1 PYTHONUNBUFFERED=1\n"));
}

TEST(ExportTest, SbatchScriptIsValidBash) {
  const v1::Search search = Search();
  absl::StatusOr<std::string> text =
      ExportCandidate(search, search.candidates(0), ExportFormat::kSbatch);
  ASSERT_TRUE(text.ok());
  EXPECT_THAT(*text, HasSubstr("#SBATCH --nodes=4"));
  EXPECT_THAT(*text, HasSubstr("#SBATCH --gpus-per-node=4"));
  EXPECT_THAT(*text, HasSubstr("--nproc-per-node=4"));
  EXPECT_THAT(*text, HasSubstr("  --tensor-model-parallel-size=2 \\\n"));
  // The template's own environment and entry point, not the export's copy of them.
  EXPECT_THAT(*text, HasSubstr("\nexport CUDA_DEVICE_MAX_CONNECTIONS=1 PYTHONUNBUFFERED=1\n"));
  EXPECT_THAT(*text, HasSubstr("/pretrain_gpt.py\" \"$@\"' bash"));
  const std::string path = ::testing::TempDir() + "/export.sbatch";
  std::ofstream(path) << *text;
  EXPECT_EQ(std::system(absl::StrCat("bash -n ", path).c_str()), 0) << *text;
  std::remove(path.c_str());
}

// A full-scope probe of `candidate` of `search` of full steps in one launch (no
// micro_batch_counts), on one worker per node, seen from the first.
v1::ProbeAssignment FullScopeProbe(const v1::Search& search, const v1::Candidate& candidate) {
  const v1::SearchSpec& spec = search.spec();
  v1::ProbeAssignment assignment;
  assignment.set_name(absl::StrCat(candidate.name(), "/probes/1"));
  assignment.set_backend("command");
  *assignment.mutable_model() = spec.model();
  *assignment.mutable_training() = spec.training();
  *assignment.mutable_cluster() = spec.cluster();
  *assignment.mutable_config() = candidate.config();
  assignment.set_scope(v1::PROBE_SCOPE_FULL);
  assignment.set_warmup_steps(2);
  assignment.set_timed_steps(5);
  const int64_t per_node = spec.cluster().gpus_per_node();
  assignment.set_num_ranks(spec.cluster().num_nodes() * per_node);
  for (int64_t node = 0; node < spec.cluster().num_nodes(); ++node) {
    v1::GangMember& member = *assignment.add_gang();
    member.set_worker(absl::StrCat("workers/", node + 1));
    member.set_hostname(absl::StrCat("node-", node));
    member.set_first_rank(node * per_node);
    member.set_num_ranks(per_node);
  }
  assignment.set_gang_index(0);
  for (int64_t g = 0; g < per_node; ++g) assignment.add_gpu_indices(g);
  return assignment;
}

// The framework arguments of the command a probe of `candidate` runs with the built-in
// template `name` (all of it rendered, as the command backend renders it), less those whose
// flag or key is in `probe_only`.
std::vector<std::string> ProbedArguments(const v1::Search& search, const v1::Candidate& candidate,
                                         const char* name,
                                         const std::vector<std::string>& probe_only) {
  absl::StatusOr<BuiltinTemplate> builtin = FindBuiltinTemplate(name);
  EXPECT_TRUE(builtin.ok()) << builtin.status();
  absl::StatusOr<LaunchValues> values = ProbeLaunchValues(FullScopeProbe(search, candidate));
  EXPECT_TRUE(values.ok()) << values.status();
  if (!builtin.ok() || !values.ok()) return {};
  absl::StatusOr<LaunchTemplate::Command> command = builtin->launch.Render(*values);
  EXPECT_TRUE(command.ok()) << command.status();
  if (!command.ok()) return {};
  auto entry =
      std::find(command->argv.begin(), command->argv.end(), builtin->proto.framework_entry());
  EXPECT_NE(entry, command->argv.end());
  std::vector<std::string> arguments;
  for (auto it = entry + 1; it < command->argv.end(); ++it) {
    const std::string key = it->substr(0, it->find('='));
    if (std::find(probe_only.begin(), probe_only.end(), key) == probe_only.end()) {
      arguments.push_back(*it);
    }
  }
  return arguments;
}

// The argument lines of an export's text: its lines after the comments, continuation
// backslashes dropped.
std::vector<std::string> ArgumentLines(const std::string& text) {
  std::vector<std::string> lines;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    if (absl::StartsWith(line, "#")) continue;
    lines.emplace_back(absl::StripSuffix(line, " \\"));
  }
  return lines;
}

TEST(ExportTest, TheExportIsTheProbedCommandLessItsProbeOnlyArguments) {
  const std::vector<std::string> megatron_probe_only = {"--train-iters",    "--mock-data",
                                                        "--tokenizer-type", "--log-interval",
                                                        "--log-throughput", "--eval-iters"};
  const std::vector<std::string> nemo_probe_only = {"trainer.max_steps",
                                                    "trainer.log_every_n_steps",
                                                    "trainer.limit_val_batches",
                                                    "trainer.val_check_interval",
                                                    "trainer.enable_checkpointing",
                                                    "log.ckpt",
                                                    "data.tokenizer"};
  v1::Search fp8 = LargeSearch("llama3.1-70b", 1024, 8,
                               ProbedCandidate(9, 4, 4, 2, 2, 1, v1::RECOMPUTE_SELECTIVE));
  fp8.mutable_spec()->mutable_training()->set_precision(v1::FP8);
  fp8.mutable_spec()->mutable_training()->set_distributed_optimizer(false);
  const v1::Search searches[] = {
      Search(),  // Llama-3.1-8B on 4 x 4 H100-94GB, the demo's size
      LargeSearch("llama3.1-70b", 1024, 8, ProbedCandidate(8, 4, 4, 4, 1, 2, v1::RECOMPUTE_NONE)),
      Search405B(),
      fp8,
  };
  for (const v1::Search& search : searches) {
    const v1::Candidate& candidate = search.candidates(0);
    SCOPED_TRACE(absl::StrCat(search.spec().model().preset(), " ", candidate.name()));
    absl::StatusOr<std::vector<std::string>> exported =
        ExportArguments(search, candidate, ExportFormat::kMegatron);
    ASSERT_TRUE(exported.ok()) << exported.status();
    EXPECT_EQ(*exported, ProbedArguments(search, candidate, "megatron-llama", megatron_probe_only));
    absl::StatusOr<std::string> text = ExportCandidate(search, candidate, ExportFormat::kMegatron);
    ASSERT_TRUE(text.ok()) << text.status();
    EXPECT_EQ(ArgumentLines(*text), *exported);

    exported = ExportArguments(search, candidate, ExportFormat::kNemo);
    ASSERT_TRUE(exported.ok()) << exported.status();
    EXPECT_EQ(*exported, ProbedArguments(search, candidate, "nemo-llama", nemo_probe_only));
    text = ExportCandidate(search, candidate, ExportFormat::kNemo);
    ASSERT_TRUE(text.ok()) << text.status();
    EXPECT_EQ(ArgumentLines(*text), *exported);
  }
  absl::StatusOr<std::vector<std::string>> fp8_arguments =
      ExportArguments(fp8, fp8.candidates(0), ExportFormat::kMegatron);
  ASSERT_TRUE(fp8_arguments.ok());
  EXPECT_THAT(*fp8_arguments, Contains("--fp8-format=hybrid"));
  EXPECT_THAT(*fp8_arguments, Contains("--context-parallel-size=2"));
  EXPECT_THAT(*fp8_arguments, Not(Contains("--use-distributed-optimizer")));
  fp8_arguments = ExportArguments(fp8, fp8.candidates(0), ExportFormat::kNemo);
  ASSERT_TRUE(fp8_arguments.ok());
  EXPECT_THAT(*fp8_arguments, Contains("trainer.plugins.fp8=hybrid"));
  EXPECT_THAT(*fp8_arguments, Contains("optim.config.use_distributed_optimizer=False"));
  EXPECT_THAT(*fp8_arguments, Contains("trainer.strategy.ddp.overlap_param_gather=False"));
}

// Llama-3.1-70B fp8 on 8 x 8 H100-80GB as dp4 tp4 pp2 cp2 with every training switch on:
// fp8 weights, TP communication overlap and the context-parallel all-gather.
v1::Search SwitchesSearch() {
  v1::Search search = LargeSearch("llama3.1-70b", 1024, 8,
                                  ProbedCandidate(9, 4, 4, 2, 2, 1, v1::RECOMPUTE_SELECTIVE));
  v1::TrainingSpec& training = *search.mutable_spec()->mutable_training();
  training.set_precision(v1::FP8);
  training.set_fp8_param_gather(true);
  training.set_tp_comm_overlap(true);
  training.set_cp_comm_type(v1::CP_COMM_TYPE_ALL_GATHER);
  return search;
}

TEST(ExportTest, TheTrainingSwitchesAreExported) {
  v1::Search search = SwitchesSearch();
  absl::StatusOr<std::vector<std::string>> arguments =
      ExportArguments(search, search.candidates(0), ExportFormat::kMegatron);
  ASSERT_TRUE(arguments.ok()) << arguments.status();
  EXPECT_THAT(*arguments, Contains("--fp8-param-gather"));
  EXPECT_THAT(*arguments, Contains("--tp-comm-overlap"));
  EXPECT_THAT(*arguments, Contains("--cp-comm-type=all_gather"));
  EXPECT_EQ(*arguments, ProbedArguments(search, search.candidates(0), "megatron-llama",
                                        {"--train-iters", "--mock-data", "--tokenizer-type",
                                         "--log-interval", "--log-throughput", "--eval-iters"}));

  // The ring is written as such; off, the switches write nothing.
  v1::TrainingSpec& training = *search.mutable_spec()->mutable_training();
  training.set_cp_comm_type(v1::CP_COMM_TYPE_UNSPECIFIED);
  training.set_fp8_param_gather(false);
  training.set_tp_comm_overlap(false);
  arguments = ExportArguments(search, search.candidates(0), ExportFormat::kMegatron);
  ASSERT_TRUE(arguments.ok()) << arguments.status();
  EXPECT_THAT(*arguments, Contains("--cp-comm-type=p2p"));
  EXPECT_THAT(*arguments, Not(Contains("--fp8-param-gather")));
  EXPECT_THAT(*arguments, Not(Contains("--tp-comm-overlap")));
  absl::StatusOr<std::vector<std::string>> nemo =
      ExportArguments(search, search.candidates(0), ExportFormat::kNemo);
  ASSERT_TRUE(nemo.ok()) << nemo.status();
  EXPECT_THAT(*nemo, Contains("model.config.cp_comm_type=p2p"));
  EXPECT_THAT(*nemo, Not(Contains(HasSubstr("fp8_param_gather"))));

  // Without context parallelism there is no type to write.
  arguments = ExportArguments(Search(), Search().candidates(0), ExportFormat::kMegatron);
  ASSERT_TRUE(arguments.ok()) << arguments.status();
  EXPECT_THAT(*arguments, Not(Contains(HasSubstr("--cp-comm-type"))));
}

TEST(ExportTest, NemoOverridesCannotOverlapTensorParallelCommunication) {
  v1::Search search = SwitchesSearch();
  const absl::Status status =
      ExportArguments(search, search.candidates(0), ExportFormat::kNemo).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("training.tp_comm_overlap (true) cannot be exported as "
                                          "NeMo v2.4.0 recipe overrides"));
  EXPECT_THAT(status.message(), HasSubstr("MegatronCommOverlapCallback(tp_comm_overlap=True)"));

  // The other switches are NeMo overrides; at tp 1 there is nothing to overlap.
  search.mutable_spec()->mutable_training()->set_tp_comm_overlap(false);
  absl::StatusOr<std::vector<std::string>> arguments =
      ExportArguments(search, search.candidates(0), ExportFormat::kNemo);
  ASSERT_TRUE(arguments.ok()) << arguments.status();
  EXPECT_THAT(*arguments, Contains("trainer.plugins.fp8_param_gather=True"));
  EXPECT_THAT(*arguments, Contains("model.config.cp_comm_type=all_gather"));
  EXPECT_THAT(*arguments, Not(Contains(HasSubstr("tp_comm_overlap"))));
  search.mutable_spec()->mutable_training()->set_tp_comm_overlap(true);
  *search.mutable_candidates(0) = ProbedCandidate(9, 16, 1, 2, 2, 1, v1::RECOMPUTE_SELECTIVE);
  EXPECT_TRUE(ExportArguments(search, search.candidates(0), ExportFormat::kNemo).ok());
}

// Qwen3-30B-A3B on 2 x 8 GPUs as dp8 tp1 pp2 with ep8: the example of docs/backends.md,
// "Mixture-of-experts exports".
v1::Search QwenMoeSearch() {
  v1::Candidate candidate = ProbedCandidate(4, 8, 1, 2, 1, 1, v1::RECOMPUTE_NONE);
  candidate.mutable_config()->set_expert_parallel(8);
  return LargeSearch("qwen3-30b-a3b", 1024, 2, std::move(candidate));
}

TEST(ExportTest, MixtureOfExpertsExportsStateTheExpertsInBothFormats) {
  v1::Search search = QwenMoeSearch();
  absl::StatusOr<std::string> megatron =
      ExportCandidate(search, search.candidates(0), ExportFormat::kMegatron);
  ASSERT_TRUE(megatron.ok()) << megatron.status();
  for (const char* expected :
       {"--num-experts=128 \\\n", "--moe-ffn-hidden-size=768 \\\n", "--moe-router-topk=8 \\\n",
        "--expert-model-parallel-size=8 \\\n", "--expert-tensor-parallel-size=1 \\\n",
        "--kv-channels=128 \\\n", "--moe-token-dispatcher-type=alltoall \\\n",
        "--moe-grouped-gemm \\\n"}) {
    EXPECT_THAT(*megatron, HasSubstr(expected));
  }
  // The layer list holds brackets, which a shell would glob: quoted.
  EXPECT_THAT(*megatron, HasSubstr("'--moe-layer-freq=[1,1,1,"));
  absl::StatusOr<std::vector<std::string>> nemo =
      ExportArguments(search, search.candidates(0), ExportFormat::kNemo);
  ASSERT_TRUE(nemo.ok()) << nemo.status();
  EXPECT_THAT(*nemo, Contains("model.config.num_moe_experts=128"));
  EXPECT_THAT(*nemo, Contains("trainer.strategy.expert_model_parallel_size=8"));
}

TEST(ExportTest, NemoOverridesCannotKeepDenseLayersBetweenMoeLayers) {
  // Llama 4 Maverick: experts on every other layer, which NeMo v2.4.0's layer spec cannot say.
  v1::Candidate candidate = ProbedCandidate(6, 8, 4, 2, 1, 1, v1::RECOMPUTE_FULL);
  candidate.mutable_config()->set_expert_parallel(16);
  candidate.mutable_config()->set_expert_tensor_parallel(1);
  const v1::Search search = LargeSearch("llama4-maverick", 1024, 8, std::move(candidate));
  EXPECT_EQ(ExportArguments(search, search.candidates(0), ExportFormat::kNemo).status(),
            absl::FailedPreconditionError(
                "model \"llama4-maverick\" holds experts on 24 of its 48 layers, which "
                "--format=nemo (the built-in template nemo-llama, NeMo v2.4.0) cannot state: it "
                "would put experts on every layer; export --format=megatron"));
  absl::StatusOr<std::vector<std::string>> megatron =
      ExportArguments(search, search.candidates(0), ExportFormat::kMegatron);
  ASSERT_TRUE(megatron.ok()) << megatron.status();
  EXPECT_THAT(*megatron, Contains("--moe-shared-expert-intermediate-size=8192"));
  EXPECT_THAT(*megatron, Contains("--moe-router-score-function=sigmoid"));
  EXPECT_THAT(*megatron, Contains(HasSubstr("--moe-layer-freq=[0,1,0,1,")));
}

// Llama 4 Scout (a shared expert on every layer): the shared-expert overlap reaches each format
// where the model has shared experts, and the pinned Megatron-LM release takes it.
TEST(ExportTest, TheSharedExpertOverlapIsExportedWhereTheModelHasSharedExperts) {
  v1::Candidate candidate = ProbedCandidate(6, 8, 2, 1, 1, 1, v1::RECOMPUTE_FULL);
  candidate.mutable_config()->set_expert_parallel(16);
  candidate.mutable_config()->set_expert_tensor_parallel(1);
  v1::Search search = LargeSearch("llama4-scout", 256, 2, std::move(candidate));
  search.mutable_spec()->mutable_training()->set_moe_shared_expert_overlap(true);
  absl::StatusOr<std::vector<std::string>> megatron =
      ExportArguments(search, search.candidates(0), ExportFormat::kMegatron);
  ASSERT_TRUE(megatron.ok()) << megatron.status();
  EXPECT_THAT(*megatron, Contains("--moe-shared-expert-overlap"));
  absl::StatusOr<std::map<std::string, std::string>> environment =
      ExportEnvironment(search, search.candidates(0), ExportFormat::kMegatron);
  ASSERT_TRUE(environment.ok()) << environment.status();
  absl::StatusOr<MegatronLaunch> launch = CheckMegatronArguments(*megatron, 16, *environment);
  ASSERT_TRUE(launch.ok()) << launch.status();
  EXPECT_TRUE(launch->moe_shared_expert_overlap);
  absl::StatusOr<std::vector<std::string>> nemo =
      ExportArguments(search, search.candidates(0), ExportFormat::kNemo);
  ASSERT_TRUE(nemo.ok()) << nemo.status();
  EXPECT_THAT(*nemo, Contains("model.config.moe_shared_expert_overlap=True"));
  absl::StatusOr<std::vector<std::string>> bridge =
      ExportArguments(search, search.candidates(0), ExportFormat::kMegatronBridge);
  ASSERT_TRUE(bridge.ok()) << bridge.status();
  EXPECT_THAT(*bridge, Contains("model.moe_shared_expert_overlap=true"));

  // Qwen3-30B-A3B has none: nothing to overlap, nothing written.
  v1::Search qwen = QwenMoeSearch();
  qwen.mutable_spec()->mutable_training()->set_moe_shared_expert_overlap(true);
  megatron = ExportArguments(qwen, qwen.candidates(0), ExportFormat::kMegatron);
  ASSERT_TRUE(megatron.ok()) << megatron.status();
  EXPECT_THAT(*megatron, Not(Contains("--moe-shared-expert-overlap")));
}

TEST(ExportTest, NemoOverridesForAnUnevenInterleavedSplit) {
  const v1::Search search = Search405B();
  absl::StatusOr<std::vector<std::string>> arguments =
      ExportArguments(search, search.candidates(0), ExportFormat::kNemo);
  ASSERT_TRUE(arguments.ok()) << arguments.status();
  for (const char* expected :
       {"trainer.strategy.virtual_pipeline_model_parallel_size=2",
        "trainer.strategy.account_for_embedding_in_pipeline_split=True",
        "trainer.strategy.account_for_loss_in_pipeline_split=True",
        "trainer.strategy.ddp.align_param_gather=True", "model.config.overlap_p2p_comm=True",
        "model.config.batch_p2p_comm=False", "trainer.plugins.grad_reduce_in_fp32=False",
        "model.config.num_layers=126"}) {
    EXPECT_THAT(*arguments, Contains(expected));
  }
  for (const char* absent : {"trainer.plugins.fp8", "data.tokenizer", "model.config.vocab_size"}) {
    EXPECT_THAT(*arguments, Not(Contains(HasSubstr(absent))));
  }
}

TEST(ExportTest, MegatronBridgeOverrides) {
  const v1::Search search = Search();
  absl::StatusOr<std::string> text =
      ExportCandidate(search, search.candidates(0), ExportFormat::kMegatronBridge);
  ASSERT_TRUE(text.ok()) << text.status();
  for (const char* expected :
       {"# Megatron-Bridge recipe overrides for searches/3/candidates/5",
        "# The arguments after scripts/training/run_recipe.py of the built-in template "
        "megatron-bridge-llama (deploy/templates/megatron_bridge_llama.textproto)",
        "# Checked against Megatron-Bridge v0.5.0;",
        "\n--recipe=llama31_8b_pretrain_config \\\n",
        "model.tensor_model_parallel_size=2 \\\n",
        "model.pipeline_model_parallel_size=2",
        "model.context_parallel_size=1",
        "model.sequence_parallel=true",
        "model.virtual_pipeline_model_parallel_size=2",
        "model.recompute_granularity=full",
        "model.recompute_method=uniform",
        "model.recompute_num_layers=1",
        "train.micro_batch_size=2",
        "train.global_batch_size=1024",
        "dataset.sequence_length=8192",
        "model.seq_length=8192",
        "model.num_layers=32",
        "model.hidden_size=4096",
        "model.ffn_hidden_size=14336",
        "model.num_attention_heads=32",
        "model.num_query_groups=8",
        "model.vocab_size=128256",
        "model.share_embeddings_and_output_weights=false",
        "ddp.align_param_gather=true",
        "model.overlap_p2p_comm=true",
        "model.batch_p2p_comm=false"}) {
    EXPECT_THAT(*text, HasSubstr(expected));
  }
  absl::StatusOr<std::vector<std::string>> arguments =
      ExportArguments(search, search.candidates(0), ExportFormat::kMegatronBridge);
  ASSERT_TRUE(arguments.ok()) << arguments.status();
  for (const char* absent :
       {"--dataset", "train.train_iters", "logger.", "validation.", "checkpoint.", "tokenizer.",
        "mixed_precision", "use_distributed_optimizer", "model.cp_comm_type", "moe"}) {
    EXPECT_THAT(*arguments, Not(Contains(HasSubstr(absent))));
  }
}

// The override keys and run_recipe.py options of Megatron-Bridge v0.5.0 (frameworks/).
std::set<std::string> MegatronBridgeKeys() {
  absl::StatusOr<std::set<std::string>> keys = ReadPinnedList(absl::StrCat(
      std::getenv("TEST_SRCDIR"), "/paratune/frameworks/megatron_bridge_v0.5.0_override_keys.txt"));
  EXPECT_TRUE(keys.ok()) << keys.status();
  return keys.ok() ? *std::move(keys) : std::set<std::string>();
}

TEST(ExportTest, MegatronBridgeExportsAreTheProbedOverridesOfThePinnedRelease) {
  const std::vector<std::string> probe_only = {"--dataset",
                                               "train.train_iters",
                                               "logger.log_interval",
                                               "logger.log_throughput",
                                               "validation.eval_iters",
                                               "checkpoint.save",
                                               "checkpoint.load",
                                               "tokenizer.vocab_size"};
  v1::Search fp8 = LargeSearch("llama3.1-70b", 1024, 8,
                               ProbedCandidate(9, 4, 4, 2, 2, 1, v1::RECOMPUTE_SELECTIVE));
  fp8.mutable_spec()->mutable_training()->set_precision(v1::FP8);
  fp8.mutable_spec()->mutable_training()->set_fp8_param_gather(true);
  fp8.mutable_spec()->mutable_training()->set_cp_comm_type(v1::CP_COMM_TYPE_ALL_GATHER);
  v1::Search replicated = Search();
  replicated.mutable_spec()->mutable_training()->set_distributed_optimizer(false);
  v1::Search moe = QwenMoeSearch();
  moe.mutable_spec()->mutable_training()->set_moe_capacity_factor(1.25);
  const v1::Search searches[] = {
      Search(),
      replicated,
      LargeSearch("llama3.1-70b", 1024, 8, ProbedCandidate(8, 4, 4, 4, 1, 2, v1::RECOMPUTE_NONE)),
      fp8,
      moe,
  };
  const std::set<std::string> keys = MegatronBridgeKeys();
  ASSERT_GT(keys.size(), 40u);
  for (const v1::Search& search : searches) {
    const v1::Candidate& candidate = search.candidates(0);
    SCOPED_TRACE(absl::StrCat(search.spec().model().preset(), " ", candidate.name()));
    absl::StatusOr<std::vector<std::string>> exported =
        ExportArguments(search, candidate, ExportFormat::kMegatronBridge);
    ASSERT_TRUE(exported.ok()) << exported.status();
    EXPECT_EQ(*exported, ProbedArguments(search, candidate, "megatron-bridge-llama", probe_only));
    absl::StatusOr<std::string> text =
        ExportCandidate(search, candidate, ExportFormat::kMegatronBridge);
    ASSERT_TRUE(text.ok()) << text.status();
    EXPECT_EQ(ArgumentLines(*text), *exported);
    for (const std::string& argument : *exported) {
      EXPECT_EQ(keys.count(argument.substr(0, argument.find('='))), 1u)
          << argument << " is not in frameworks/megatron_bridge_v0.5.0_override_keys.txt";
    }
  }
  absl::StatusOr<std::vector<std::string>> arguments =
      ExportArguments(fp8, fp8.candidates(0), ExportFormat::kMegatronBridge);
  ASSERT_TRUE(arguments.ok());
  EXPECT_THAT(*arguments, Contains("mixed_precision=bf16_with_fp8_delayed_scaling_mixed"));
  EXPECT_THAT(*arguments, Contains("model.cp_comm_type=all_gather"));
  arguments = ExportArguments(replicated, replicated.candidates(0), ExportFormat::kMegatronBridge);
  ASSERT_TRUE(arguments.ok());
  EXPECT_THAT(*arguments, Contains("ddp.use_distributed_optimizer=false"));
  EXPECT_THAT(*arguments, Contains("optimizer.use_distributed_optimizer=false"));
  EXPECT_THAT(*arguments, Contains("ddp.overlap_param_gather=false"));
  arguments = ExportArguments(moe, moe.candidates(0), ExportFormat::kMegatronBridge);
  ASSERT_TRUE(arguments.ok());
  for (const char* expected :
       {"model.num_moe_experts=128", "model.expert_model_parallel_size=8",
        "model.expert_tensor_parallel_size=1", "model.moe_ffn_hidden_size=768",
        "model.moe_router_topk=8", "model.kv_channels=128", "model.moe_grouped_gemm=true",
        "model.moe_token_dispatcher_type=alltoall", "model.moe_expert_capacity_factor=1.25",
        "model.moe_pad_expert_input_to_capacity=true"}) {
    EXPECT_THAT(*arguments, Contains(expected));
  }
}

TEST(ExportTest, FlexDispatcherExportsItsBackendAndNemoRefusesIt) {
  for (const auto& [dispatcher, backend] :
       {std::pair{v1::MOE_TOKEN_DISPATCHER_FLEX_DEEPEP, "deepep"},
        std::pair{v1::MOE_TOKEN_DISPATCHER_FLEX_HYBRIDEP, "hybridep"}}) {
    SCOPED_TRACE(backend);
    v1::Search search = QwenMoeSearch();
    search.mutable_spec()->mutable_training()->set_moe_token_dispatcher(dispatcher);
    const v1::Candidate& candidate = search.candidates(0);
    absl::StatusOr<std::vector<std::string>> megatron =
        ExportArguments(search, candidate, ExportFormat::kMegatron);
    ASSERT_TRUE(megatron.ok()) << megatron.status();
    EXPECT_THAT(*megatron, Contains("--moe-token-dispatcher-type=flex"));
    EXPECT_THAT(*megatron, Contains(absl::StrCat("--moe-flex-dispatcher-backend=", backend)));
    absl::StatusOr<std::map<std::string, std::string>> environment =
        ExportEnvironment(search, candidate, ExportFormat::kMegatron);
    ASSERT_TRUE(environment.ok()) << environment.status();
    // Megatron-LM's own checks, replayed, take the export.
    absl::StatusOr<MegatronLaunch> launch = CheckMegatronArguments(*megatron, 16, *environment);
    ASSERT_TRUE(launch.ok()) << launch.status();
    EXPECT_EQ(launch->moe_token_dispatcher_type, "flex");
    EXPECT_EQ(launch->moe_flex_dispatcher_backend, backend);
    absl::StatusOr<std::string> sbatch = ExportCandidate(search, candidate, ExportFormat::kSbatch);
    ASSERT_TRUE(sbatch.ok()) << sbatch.status();
    EXPECT_THAT(*sbatch, HasSubstr(absl::StrCat("--moe-flex-dispatcher-backend=", backend)));

    absl::StatusOr<std::vector<std::string>> bridge =
        ExportArguments(search, candidate, ExportFormat::kMegatronBridge);
    ASSERT_TRUE(bridge.ok()) << bridge.status();
    EXPECT_THAT(*bridge, Contains("model.moe_token_dispatcher_type=flex"));
    EXPECT_THAT(*bridge, Contains(absl::StrCat("model.moe_flex_dispatcher_backend=", backend)));
    const std::set<std::string> keys = MegatronBridgeKeys();
    for (const std::string& argument : *bridge) {
      EXPECT_EQ(keys.count(argument.substr(0, argument.find('='))), 1u)
          << argument << " is not in frameworks/megatron_bridge_v0.5.0_override_keys.txt";
    }

    const absl::Status nemo = ExportArguments(search, candidate, ExportFormat::kNemo).status();
    EXPECT_EQ(nemo.code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(nemo.message(), HasSubstr("no NeMo v2.4.0 key sets the flex dispatcher's backend"));
  }
  // The all-to-all export names no backend.
  const v1::Search search = QwenMoeSearch();
  absl::StatusOr<std::vector<std::string>> megatron =
      ExportArguments(search, search.candidates(0), ExportFormat::kMegatron);
  ASSERT_TRUE(megatron.ok()) << megatron.status();
  EXPECT_THAT(*megatron, Not(Contains(HasSubstr("--moe-flex-dispatcher-backend"))));
}

TEST(ExportTest, MegatronBridgeRefusesWhatItsOverridesCannotState) {
  v1::Search search = SwitchesSearch();  // fp8 weights and TP communication overlap
  absl::Status status =
      ExportArguments(search, search.candidates(0), ExportFormat::kMegatronBridge).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("training.tp_comm_overlap (true) cannot be exported as "
                                          "Megatron-Bridge v0.5.0 recipe overrides"));

  search.mutable_spec()->mutable_training()->set_tp_comm_overlap(false);
  search.mutable_spec()->mutable_training()->set_fp8_param_gather(false);
  status = ExportArguments(search, search.candidates(0), ExportFormat::kMegatronBridge).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("training.fp8_param_gather (false) with fp8 cannot be "
                                          "exported as Megatron-Bridge v0.5.0 recipe overrides"));

  const v1::Search bf16_gradients = Search405B();
  status =
      ExportArguments(bf16_gradients, bf16_gradients.candidates(0), ExportFormat::kMegatronBridge)
          .status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("training.fp32_gradients (false) cannot be exported"));
  EXPECT_THAT(status.message(), HasSubstr("cfg.mixed_precision.grad_reduce_in_fp32 = False"));

  // Llama 4 Maverick keeps dense layers between its MoE layers, which the recipe's provider
  // cannot state.
  v1::Candidate candidate = ProbedCandidate(6, 8, 4, 2, 1, 1, v1::RECOMPUTE_FULL);
  candidate.mutable_config()->set_expert_parallel(16);
  candidate.mutable_config()->set_expert_tensor_parallel(1);
  const v1::Search maverick = LargeSearch("llama4-maverick", 1024, 8, std::move(candidate));
  EXPECT_EQ(
      ExportArguments(maverick, maverick.candidates(0), ExportFormat::kMegatronBridge).status(),
      absl::FailedPreconditionError(
          "model \"llama4-maverick\" holds experts on 24 of its 48 layers, which "
          "--format=megatron-bridge (the built-in template megatron-bridge-llama, "
          "Megatron-Bridge v0.5.0) cannot state: it would put experts on every layer; export "
          "--format=megatron"));
}

// Llama-3.1-8B on 4 x 4 GPUs as dp4 tp4 (tensor parallelism, so Megatron-LM's rule on
// CUDA_DEVICE_MAX_CONNECTIONS applies) with its replicas sharded as `sharding`, in hybrid
// groups of `shard_group` data-parallel ranks (0: over all four).
v1::Search ShardedSearch(v1::DataParallelSharding sharding, int64_t shard_group) {
  v1::Search search = Search();
  search.clear_candidates();
  v1::Candidate candidate = ProbedCandidate(4, 4, 4, 1, 1, 1, v1::RECOMPUTE_NONE);
  candidate.mutable_config()->set_dp_sharding(sharding);
  candidate.mutable_config()->set_dp_shard_group(shard_group);
  *search.add_candidates() = std::move(candidate);
  return search;
}

TEST(ExportTest, EveryShardingModeExportsAsThePinnedReleasesTakeIt) {
  struct Case {
    v1::DataParallelSharding sharding;
    int64_t shard_group;
    bool megatron_fsdp;
    const char* strategy;  // --data-parallel-sharding-strategy; "" without Megatron-FSDP
    bool distributed_optimizer;
    int64_t instances;
    const char* connections;
  };
  const Case cases[] = {
      {v1::DP_SHARDING_NONE, 0, false, "", false, 1, "1"},
      {v1::DP_SHARDING_OPTIMIZER, 0, false, "", true, 1, "1"},
      // The partial distributed optimizer: two replicas of a shard over two ranks.
      {v1::DP_SHARDING_OPTIMIZER, 2, false, "", true, 2, "1"},
      {v1::DP_SHARDING_GRADIENTS, 0, true, "optim_grads", true, 1, "8"},
      {v1::DP_SHARDING_FULL, 0, true, "optim_grads_params", true, 1, "8"},
      // HSDP: fully sharded within pairs of ranks, replicated across the two pairs.
      {v1::DP_SHARDING_FULL, 2, true, "optim_grads_params", true, 2, "8"},
  };
  const std::set<std::string> bridge_keys = MegatronBridgeKeys();
  for (const Case& c : cases) {
    const v1::Search search = ShardedSearch(c.sharding, c.shard_group);
    const v1::Candidate& candidate = search.candidates(0);
    SCOPED_TRACE(
        absl::StrCat(v1::DataParallelSharding_Name(c.sharding), " in groups of ", c.shard_group));
    absl::StatusOr<std::vector<std::string>> arguments =
        ExportArguments(search, candidate, ExportFormat::kMegatron);
    absl::StatusOr<std::map<std::string, std::string>> environment =
        ExportEnvironment(search, candidate, ExportFormat::kMegatron);
    ASSERT_TRUE(arguments.ok()) << arguments.status();
    ASSERT_TRUE(environment.ok()) << environment.status();
    EXPECT_EQ((*environment)["CUDA_DEVICE_MAX_CONNECTIONS"], c.connections);
    absl::StatusOr<MegatronLaunch> launch = CheckMegatronArguments(*arguments, 16, *environment);
    ASSERT_TRUE(launch.ok()) << launch.status();
    EXPECT_EQ(launch->megatron_fsdp, c.megatron_fsdp);
    EXPECT_EQ(launch->data_parallel_sharding_strategy, c.strategy);
    EXPECT_EQ(launch->distributed_optimizer, c.distributed_optimizer);
    EXPECT_EQ(launch->distributed_optimizer_instances, c.instances);
    // The parameter gathers overlap wherever something is sharded.
    EXPECT_EQ(launch->overlap_param_gather, c.sharding != v1::DP_SHARDING_NONE);
    EXPECT_TRUE(launch->overlap_grad_reduce);

    arguments = ExportArguments(search, candidate, ExportFormat::kMegatronBridge);
    environment = ExportEnvironment(search, candidate, ExportFormat::kMegatronBridge);
    ASSERT_TRUE(arguments.ok()) << arguments.status();
    ASSERT_TRUE(environment.ok()) << environment.status();
    EXPECT_EQ((*environment)["CUDA_DEVICE_MAX_CONNECTIONS"], c.connections);
    for (const std::string& argument : *arguments) {
      EXPECT_EQ(bridge_keys.count(argument.substr(0, argument.find('='))), 1u)
          << argument << " is not in frameworks/megatron_bridge_v0.5.0_override_keys.txt";
    }
    EXPECT_EQ(absl::c_count(*arguments, "ddp.use_megatron_fsdp=true"), c.megatron_fsdp ? 1 : 0);
    if (c.megatron_fsdp) {
      EXPECT_THAT(*arguments,
                  Contains(absl::StrCat("ddp.data_parallel_sharding_strategy=", c.strategy)));
      EXPECT_THAT(*arguments, Contains("checkpoint.ckpt_format=fsdp_dtensor"));
    }
    EXPECT_EQ(absl::c_count(*arguments, "ddp.num_distributed_optimizer_instances=2"),
              c.instances == 2 ? 1 : 0);
    const bool replicated = c.sharding == v1::DP_SHARDING_NONE;
    EXPECT_EQ(absl::c_count(*arguments, "ddp.use_distributed_optimizer=false"), replicated);
    EXPECT_EQ(absl::c_count(*arguments, "optimizer.use_distributed_optimizer=false"), replicated);
    EXPECT_EQ(absl::c_count(*arguments, "ddp.overlap_param_gather=false"), replicated);
  }
}

TEST(ExportTest, MegatronFsdpWithOneConnectionIsRefusedAsMegatronLmRefusesIt) {
  const v1::Search search = ShardedSearch(v1::DP_SHARDING_FULL, 0);
  absl::StatusOr<std::vector<std::string>> arguments =
      ExportArguments(search, search.candidates(0), ExportFormat::kMegatron);
  ASSERT_TRUE(arguments.ok()) << arguments.status();
  const absl::Status status =
      CheckMegatronArguments(*arguments, 16, {{"CUDA_DEVICE_MAX_CONNECTIONS", "1"}}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("megatron-fsdp-connections"));
  // And without its checkpoint format.
  std::vector<std::string> without_format = *arguments;
  without_format.erase(
      std::remove(without_format.begin(), without_format.end(), "--ckpt-format=fsdp_dtensor"),
      without_format.end());
  EXPECT_THAT(CheckMegatronArguments(without_format, 16, {{"CUDA_DEVICE_MAX_CONNECTIONS", "8"}})
                  .status()
                  .message(),
              HasSubstr("megatron-fsdp-ckpt-format"));
}

TEST(ExportTest, NemoOverridesStateOnlyTheDistributedOptimizer) {
  absl::StatusOr<std::vector<std::string>> arguments =
      ExportArguments(ShardedSearch(v1::DP_SHARDING_NONE, 0),
                      ShardedSearch(v1::DP_SHARDING_NONE, 0).candidates(0), ExportFormat::kNemo);
  ASSERT_TRUE(arguments.ok()) << arguments.status();
  EXPECT_THAT(*arguments, Contains("optim.config.use_distributed_optimizer=False"));
  for (const v1::DataParallelSharding sharding :
       {v1::DP_SHARDING_GRADIENTS, v1::DP_SHARDING_FULL}) {
    const v1::Search search = ShardedSearch(sharding, 0);
    const absl::Status status =
        ExportArguments(search, search.candidates(0), ExportFormat::kNemo).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(status.message(),
                HasSubstr(absl::StrCat("config.dp_sharding (",
                                       sharding == v1::DP_SHARDING_FULL ? "full" : "gradients",
                                       ") cannot be exported as --format=nemo (the built-in "
                                       "template nemo-llama, NeMo v2.4.0)")));
  }
  const v1::Search hybrid = ShardedSearch(v1::DP_SHARDING_OPTIMIZER, 2);
  EXPECT_EQ(ExportArguments(hybrid, hybrid.candidates(0), ExportFormat::kNemo).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(ExportArguments(hybrid, hybrid.candidates(0), ExportFormat::kNemo).status().message(),
              HasSubstr("config.dp_shard_group (2) cannot be exported as --format=nemo"));
}

// The 8B on 4 x 4 GPUs as tp4 (the demo's best), the 70B interleaved over pp4, the 405B's
// uneven interleaved split, and the 70B in fp8 with every training switch on, searched for
// TorchTitan: their candidates are sharded with FSDP, TorchTitan's default.
std::vector<v1::Search> TorchTitanSearches() {
  v1::Search search405b = Search405B();
  search405b.mutable_spec()->mutable_training()->set_fp32_gradients(true);
  std::vector<v1::Search> searches = {
      Search(),
      LargeSearch("llama3.1-70b", 1024, 8, ProbedCandidate(8, 4, 4, 4, 1, 2, v1::RECOMPUTE_NONE)),
      search405b,
      SwitchesSearch(),
  };
  for (v1::Search& search : searches) {
    v1::TrainingSpec& training = *search.mutable_spec()->mutable_training();
    training.set_framework(v1::FRAMEWORK_TORCHTITAN);
    // TorchTitan's async TP needs torch.compile (TrainingSpec::Create).
    training.set_torch_compile(training.tp_comm_overlap());
  }
  return searches;
}

// The candidate of TorchTitanSearches() that is exported: the first probed.
const v1::Candidate& ExportedCandidate(const v1::Search& search) {
  return search.candidates(0).state() == v1::CANDIDATE_PROBED ? search.candidates(0)
                                                              : search.candidates(1);
}

// The probed options less the probe's own, each an option of the pinned release.
TEST(ExportTest, TorchTitanOptionsAreTheProbedOnesLessTheProbesOwn) {
  const std::vector<std::string> probe_only = {"--training.steps", "--training.dataset",
                                               "--metrics.log_freq",
                                               "--metrics.disable_color_printing"};
  const std::vector<v1::Search> searches = TorchTitanSearches();
  const absl::StatusOr<std::set<std::string>> options =
      ReadPinnedList("frameworks/torchtitan_v0.2.2_options.txt");
  ASSERT_TRUE(options.ok()) << options.status();
  for (const v1::Search& search : searches) {
    const v1::Candidate& candidate = ExportedCandidate(search);
    SCOPED_TRACE(absl::StrCat(search.spec().model().preset(), " ", candidate.name()));
    absl::StatusOr<std::vector<std::string>> exported =
        ExportArguments(search, candidate, ExportFormat::kTorchTitan);
    ASSERT_TRUE(exported.ok()) << exported.status();
    EXPECT_EQ(*exported, ProbedArguments(search, candidate, "torchtitan-llama", probe_only));
    for (const std::string& argument : *exported) {
      EXPECT_THAT(*options, Contains(argument.substr(0, argument.find('=')))) << argument;
    }
    absl::StatusOr<std::string> text =
        ExportCandidate(search, candidate, ExportFormat::kTorchTitan);
    ASSERT_TRUE(text.ok()) << text.status();
    EXPECT_EQ(ArgumentLines(*text), *exported);
    EXPECT_THAT(*text, HasSubstr("# TorchTitan options for "));
    EXPECT_THAT(*text, HasSubstr("# Checked against TorchTitan v0.2.2;"));
  }
  const v1::Search& switches_search = searches[3];
  absl::StatusOr<std::vector<std::string>> switches =
      ExportArguments(switches_search, switches_search.candidates(0), ExportFormat::kTorchTitan);
  ASSERT_TRUE(switches.ok()) << switches.status();
  for (const char* expected :
       {"--model.flavor=70B", "--model.converters=quantize.linear.float8",
        "--quantize.linear.float8.enable_fsdp_float8_all_gather",
        "--parallelism.enable_async_tensor_parallel", "--compile.enable",
        "--compile.components=model", "--parallelism.context_parallel_degree=2",
        "--parallelism.context_parallel_rotate_method=allgather",
        "--activation_checkpoint.selective_ac_option=op",
        "--parallelism.data_parallel_replicate_degree=1"}) {
    EXPECT_THAT(*switches, Contains(expected));
  }
}

// The pinned list's declared type of each option ("--section.field" to "int", "bool", ...).
std::map<std::string, std::string> TorchTitanDeclaredTypes() {
  std::map<std::string, std::string> types;
  std::ifstream file(absl::StrCat(std::getenv("TEST_SRCDIR"),
                                  "/paratune/frameworks/torchtitan_v0.2.2_options.txt"));
  std::string line;
  while (std::getline(file, line)) {
    if (line.empty() || line[0] == '#') continue;
    const std::vector<std::string> words = absl::StrSplit(line, ' ', absl::SkipWhitespace());
    if (words.size() >= 2) types[words[0]] = words[1];
  }
  return types;
}

// Whether `value`, as a TOML file writes it, is of the Python type `declared` (the pinned
// list's spelling): what ConfigManager hands the dataclass unconverted.
bool TomlValueIsOfType(absl::string_view value, absl::string_view declared) {
  absl::ConsumeSuffix(&declared, "|None");
  const bool quoted =
      value.size() >= 2 && absl::StartsWith(value, "\"") && absl::EndsWith(value, "\"");
  if (declared == "bool") return value == "true" || value == "false";
  int64_t integer = 0;
  if (declared == "int") return absl::SimpleAtoi(value, &integer);
  double number = 0;
  if (declared == "float" || declared == "float|int") {
    return absl::SimpleAtod(value, &number) && value.find_first_of(".eE") != value.npos;
  }
  if (declared == "str") return quoted;
  if (declared == "list[str]") {
    if (!absl::ConsumePrefix(&value, "[") || !absl::ConsumeSuffix(&value, "]")) return false;
    for (absl::string_view element : absl::StrSplit(value, ", ")) {
      if (!TomlValueIsOfType(element, "str")) return false;
    }
    return true;
  }
  if (absl::ConsumePrefix(&declared, "Literal[") && absl::ConsumeSuffix(&declared, "]")) {
    return quoted && absl::c_linear_search(absl::StrSplit(declared, ','), value);
  }
  return false;
}

// --format=torchtitan-toml: a job file of the same options, every key one of the pinned
// release's fields under its section, every value of the type the field declares.
TEST(ExportTest, TorchTitanJobFileHoldsTheSameOptionsTypedAsTheReleaseDeclares) {
  const std::map<std::string, std::string> declared = TorchTitanDeclaredTypes();
  ASSERT_GT(declared.size(), 100u);
  for (const v1::Search& search : TorchTitanSearches()) {
    const v1::Candidate& candidate = ExportedCandidate(search);
    SCOPED_TRACE(absl::StrCat(search.spec().model().preset(), " ", candidate.name()));
    absl::StatusOr<std::vector<std::string>> arguments =
        ExportArguments(search, candidate, ExportFormat::kTorchTitanToml);
    ASSERT_TRUE(arguments.ok()) << arguments.status();
    EXPECT_EQ(*arguments, *ExportArguments(search, candidate, ExportFormat::kTorchTitan));
    absl::StatusOr<std::string> text =
        ExportCandidate(search, candidate, ExportFormat::kTorchTitanToml);
    ASSERT_TRUE(text.ok()) << text.status();
    EXPECT_THAT(*text, AllOf(HasSubstr("# TorchTitan job file for "),
                             HasSubstr("# Checked against TorchTitan v0.2.2;"),
                             HasSubstr("--job.config_file=THIS_FILE")));
    // Each key = value under its [section], read back as the command line's options.
    std::string section;
    std::set<std::string> keys;
    for (absl::string_view line : absl::StrSplit(*text, '\n', absl::SkipEmpty())) {
      if (absl::StartsWith(line, "#")) continue;
      if (absl::ConsumePrefix(&line, "[")) {
        ASSERT_TRUE(absl::ConsumeSuffix(&line, "]")) << line;
        section = std::string(line);
        continue;
      }
      const std::vector<std::string> key_value = absl::StrSplit(line, absl::MaxSplits(" = ", 1));
      ASSERT_EQ(key_value.size(), 2u) << line;
      const std::string option = absl::StrCat("--", section, ".", key_value[0]);
      ASSERT_EQ(declared.count(option), 1u) << option << " is not in the pinned list";
      EXPECT_TRUE(TomlValueIsOfType(key_value[1], declared.at(option)))
          << line << " under [" << section << "]: not of " << declared.at(option);
      EXPECT_TRUE(keys.insert(option).second) << option << " twice";
    }
    // The same options as the command line's (which writes a true bool as its flag).
    std::set<std::string> argument_names;
    for (const std::string& argument : *arguments) {
      argument_names.insert(argument.substr(0, argument.find('=')));
    }
    EXPECT_EQ(keys, argument_names);
  }
}

// A model TorchTitan has no flavor of, and gradients reduced in bf16, are refused saying why.
TEST(ExportTest, TorchTitanRefusesWhatTheReleaseCannotRun) {
  const v1::Search tied =
      LargeSearch("llama3.2-1b", 1024, 1, ProbedCandidate(4, 8, 1, 1, 1, 1, v1::RECOMPUTE_NONE));
  absl::StatusOr<std::string> text =
      ExportCandidate(tied, tied.candidates(0), ExportFormat::kTorchTitan);
  EXPECT_EQ(text.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(text.status().message(),
              AllOf(HasSubstr("{torchtitan_flavor} has no value: model \"llama3.2-1b\""),
                    HasSubstr("is none of TorchTitan v0.2.2's llama3 flavors")));
  text = ExportCandidate(Search405B(), Search405B().candidates(0), ExportFormat::kTorchTitan);
  EXPECT_EQ(text.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(text.status().message(), HasSubstr("training.fp32_gradients (false)"));
  // A Megatron-LM search's distributed optimizer has no TorchTitan form.
  text = ExportCandidate(Search(), Search().candidates(0), ExportFormat::kTorchTitan);
  EXPECT_EQ(text.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(text.status().message(),
              HasSubstr("config.dp_sharding (optimizer): TorchTitan v0.2.2 has no "
                        "optimizer-only sharding"));
}

// TorchTitan's FSDP over all data-parallel ranks, in hybrid groups (HSDP), and without
// resharding after forward for gradients-only sharding.
TEST(ExportTest, TorchTitanStatesItsShardDegrees) {
  const struct {
    v1::DataParallelSharding sharding;
    int64_t group;
    std::vector<std::string> expected;
  } cases[] = {
      {v1::DP_SHARDING_FULL,
       0,
       {"--parallelism.data_parallel_shard_degree=4",
        "--parallelism.data_parallel_replicate_degree=1"}},
      {v1::DP_SHARDING_FULL,
       2,
       {"--parallelism.data_parallel_shard_degree=2",
        "--parallelism.data_parallel_replicate_degree=2"}},
      {v1::DP_SHARDING_GRADIENTS,
       0,
       {"--parallelism.data_parallel_shard_degree=4",
        "--parallelism.fsdp_reshard_after_forward=never"}},
  };
  for (const auto& c : cases) {
    v1::Search search = ShardedSearch(c.sharding, c.group);
    search.mutable_spec()->mutable_training()->set_framework(v1::FRAMEWORK_TORCHTITAN);
    absl::StatusOr<std::vector<std::string>> exported =
        ExportArguments(search, search.candidates(0), ExportFormat::kTorchTitan);
    ASSERT_TRUE(exported.ok()) << exported.status();
    for (const std::string& expected : c.expected) {
      EXPECT_THAT(*exported, Contains(expected)) << c.sharding << " " << c.group;
    }
  }
}

// Each format's whole text for one search, as cli/testdata/export_*.txt holds it: the 8B
// demo's best as Megatron-LM arguments (probed with a worker's template, so the note says so),
// NeMo 2 and Megatron-Bridge overrides, and the 70B with every switch on as TorchTitan options
// and job file. Byte for byte, so that a change of wording is a change of these files.
TEST(ExportTest, EachFormatsTextIsTheGoldenFiles) {
  v1::Search demo = Search();
  demo.mutable_spec()->mutable_probe()->set_backend("command");
  demo.mutable_spec()->mutable_probe()->set_command_template("site-megatron");
  const v1::Search titan = TorchTitanSearches()[3];
  const struct {
    const v1::Search& search;
    ExportFormat format;
    const char* golden;
  } cases[] = {
      {demo, ExportFormat::kMegatron, "export_megatron.txt"},
      {demo, ExportFormat::kNemo, "export_nemo.txt"},
      {demo, ExportFormat::kMegatronBridge, "export_megatron_bridge.txt"},
      {titan, ExportFormat::kTorchTitan, "export_torchtitan.txt"},
      {titan, ExportFormat::kTorchTitanToml, "export_torchtitan_toml.txt"},
  };
  for (const auto& c : cases) {
    const absl::StatusOr<std::string> text =
        ExportCandidate(c.search, ExportedCandidate(c.search), c.format);
    ASSERT_TRUE(text.ok()) << c.golden << ": " << text.status();
    std::ifstream file(
        absl::StrCat(std::getenv("TEST_SRCDIR"), "/paratune/cli/testdata/", c.golden));
    ASSERT_TRUE(file.good()) << c.golden;
    const std::string golden((std::istreambuf_iterator<char>(file)),
                             std::istreambuf_iterator<char>());
    EXPECT_EQ(*text, golden) << c.golden;
  }
}

TEST(ChooseCandidateTest, BestMeasuredOrTheOneNamed) {
  const v1::Search search = Search();
  EXPECT_EQ(ChooseCandidate(search, "")->name(), "searches/3/candidates/5");
  EXPECT_EQ(ChooseCandidate(search, "1")->name(), "searches/3/candidates/1");
  EXPECT_EQ(ChooseCandidate(search, "searches/3/candidates/2")->name(), "searches/3/candidates/2");
  EXPECT_EQ(ChooseCandidate(search, "9").status().code(), absl::StatusCode::kNotFound);
  v1::Search unmeasured = search;
  unmeasured.clear_candidates();
  *unmeasured.add_candidates() = search.candidates(2);
  EXPECT_EQ(ChooseCandidate(unmeasured, "").status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace paratune
