#include "cli/export.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

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

TEST(ExportTest, MegatronArgumentsDescribeModelAndConfiguration) {
  const v1::Search search = Search();
  absl::StatusOr<std::string> text =
      ExportCandidate(search, search.candidates(0), ExportFormat::kMegatron);
  ASSERT_TRUE(text.ok()) << text.status();
  for (const char* expected : {"--tensor-model-parallel-size 2",
                               "--pipeline-model-parallel-size 2",
                               "--context-parallel-size 1",
                               "--micro-batch-size 2",
                               "--global-batch-size 1024",
                               "--seq-length 8192",
                               "--num-layers 32",
                               "--hidden-size 4096",
                               "--ffn-hidden-size 14336",
                               "--num-attention-heads 32",
                               "--group-query-attention",
                               "--num-query-groups 8",
                               "--untie-embeddings-and-output-weights",
                               "--swiglu",
                               "--normalization RMSNorm",
                               "--num-layers-per-virtual-pipeline-stage 8",
                               "--sequence-parallel",
                               "--use-distributed-optimizer",
                               "--recompute-granularity full",
                               "--recompute-method uniform",
                               "--recompute-num-layers 1"}) {
    EXPECT_THAT(*text, HasSubstr(expected));
  }
  EXPECT_THAT(*text, HasSubstr("610.5 TFLOP/s per GPU SIMULATED by sim"));
  EXPECT_THAT(*text, Not(HasSubstr("account-for-embedding")));
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

TEST(ExportTest, UnevenPipelineSplitIsSpelledOut) {
  v1::Search search = Search();
  search.mutable_spec()->mutable_model()->set_preset("llama3.1-405b");
  v1::Candidate candidate = Candidate(0, 8, 8, 1, v1::RECOMPUTE_NONE, 400);
  absl::StatusOr<std::string> text = ExportCandidate(search, candidate, ExportFormat::kMegatron);
  ASSERT_TRUE(text.ok());
  EXPECT_THAT(*text, HasSubstr("--account-for-embedding-in-pipeline-split"));
  EXPECT_THAT(*text, HasSubstr("--account-for-loss-in-pipeline-split"));
}

TEST(ExportTest, NemoOverrides) {
  const v1::Search search = Search();
  absl::StatusOr<std::string> text =
      ExportCandidate(search, search.candidates(1), ExportFormat::kNemo);
  ASSERT_TRUE(text.ok());
  for (const char* expected :
       {"trainer.num_nodes=4", "trainer.devices=4", "trainer.strategy.tensor_model_parallel_size=4",
        "trainer.strategy.virtual_pipeline_model_parallel_size=None",
        "trainer.strategy.sequence_parallel=True", "data.micro_batch_size=2",
        "data.global_batch_size=1024", "data.seq_length=8192"}) {
    EXPECT_THAT(*text, HasSubstr(expected));
  }
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

TEST(ExportTest, SbatchScriptIsValidBash) {
  const v1::Search search = Search();
  absl::StatusOr<std::string> text =
      ExportCandidate(search, search.candidates(0), ExportFormat::kSbatch);
  ASSERT_TRUE(text.ok());
  EXPECT_THAT(*text, HasSubstr("#SBATCH --nodes=4"));
  EXPECT_THAT(*text, HasSubstr("#SBATCH --gpus-per-node=4"));
  EXPECT_THAT(*text, HasSubstr("--nproc-per-node=4"));
  EXPECT_THAT(*text, HasSubstr("--tensor-model-parallel-size 2"));
  const std::string path = ::testing::TempDir() + "/export.sbatch";
  std::ofstream(path) << *text;
  EXPECT_EQ(std::system(absl::StrCat("bash -n ", path).c_str()), 0) << *text;
  std::remove(path.c_str());
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

TEST(ParseExportFormatTest, NamesTheFlag) {
  EXPECT_EQ(*ParseExportFormat("SBATCH"), ExportFormat::kSbatch);
  EXPECT_EQ(
      ParseExportFormat("yaml").status(),
      absl::InvalidArgumentError("--format (\"yaml\") must be megatron, nemo, json or sbatch"));
}

}  // namespace
}  // namespace paratune
