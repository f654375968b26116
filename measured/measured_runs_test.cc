#include "measured/measured_runs.h"

#include <sys/stat.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "estimator/performance_fit.h"
#include "estimator/performance_parameters.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

constexpr char kDataDir[] = "data/measured";

std::vector<MeasuredRun> Load(const char* file) {
  for (const MeasuredDataset& dataset : MeasuredDatasets()) {
    if (dataset.file != file) continue;
    absl::StatusOr<std::vector<MeasuredRun>> runs = LoadMeasuredRuns(kDataDir, dataset);
    EXPECT_TRUE(runs.ok()) << runs.status();
    return runs.ok() ? *runs : std::vector<MeasuredRun>();
  }
  ADD_FAILURE() << file << " is not a measured dataset";
  return {};
}

TEST(MeasuredRunsTest, HeldOutTableIsNotFitted) {
  int held_out = 0;
  for (const MeasuredDataset& dataset : MeasuredDatasets()) held_out += !dataset.in_fit;
  EXPECT_EQ(held_out, 1);
  EXPECT_FALSE(MeasuredDatasets().back().in_fit);
  EXPECT_EQ(MeasuredDatasets().back().file, "llama31_8b_4d_abci_tsubame.csv");
}

TEST(MeasuredRunsTest, HeldOutTableHas168MeasuredRuns) {
  int completed = 0;
  for (const MeasuredRun& run : Load("llama31_8b_4d_abci_tsubame.csv")) {
    if (!run.completed) continue;
    ++completed;
    // Measured TFLOP/s round-trips through the derived step time.
    EXPECT_GT(MeasuredTflopsPerGpu(run), 50);
  }
  EXPECT_EQ(completed, 168);
}

TEST(MeasuredRunsTest, NvidiaBf16RowsWithUnevenPipeline) {
  const std::vector<MeasuredRun> runs = Load("nvidia_dgxc_h100.csv");
  EXPECT_EQ(runs.size(), 53u);  // bf16 rows only
  bool uneven_405b = false;
  for (const MeasuredRun& run : runs) {
    if (run.model.num_layers() == 126 && run.config.pp() == 8) uneven_405b = true;
    EXPECT_NEAR(MeasuredTflopsPerGpu(run), 560, 120) << run.model_name << " line " << run.line;
  }
  EXPECT_TRUE(uneven_405b);
}

TEST(MeasuredRunsTest, Fp8LlamaRows) {
  absl::StatusOr<std::vector<MeasuredRun>> runs = LoadMeasuredRuns(kDataDir, Fp8Dataset());
  ASSERT_TRUE(runs.ok()) << runs.status();
  // 3 Llama 2 and 2 Llama 3 rows of NeMo 24.07, 3 of Megatron-LM, 2 each of NeMo 25.11 and
  // 26.02 (the FSDP row and the 25.09 rows of unstated precision left out).
  EXPECT_EQ(runs->size(), 12u);
  for (const MeasuredRun& run : *runs) {
    EXPECT_TRUE(run.training.fp8());
    EXPECT_NEAR(MeasuredTflopsPerGpu(run), 750, 120) << run.model_name << " line " << run.line;
  }
  // LLAMA3-70B of Megatron-LM: 64 GPUs of tp 4 pp 8 leave dp 2.
  EXPECT_EQ((*runs)[6].model.num_layers(), 80);
  EXPECT_EQ((*runs)[6].config.dp(), 2);
}

TEST(MeasuredRunsTest, Fp8FitAndHeldOutTables) {
  const std::vector<MeasuredDataset> datasets = Fp8Datasets();
  ASSERT_EQ(datasets.size(), 2u);
  EXPECT_TRUE(datasets[0].in_fit);
  EXPECT_EQ(datasets[0].file, "nvidia_dgxc_h100.csv");
  EXPECT_FALSE(datasets[1].in_fit);
  EXPECT_EQ(datasets[1].file, Fp8Dataset().file);
  for (const MeasuredDataset& dataset : datasets) EXPECT_TRUE(dataset.fp8);
  // The bf16 tables hold no fp8 table.
  for (const MeasuredDataset& dataset : MeasuredDatasets()) EXPECT_FALSE(dataset.fp8);

  absl::StatusOr<std::vector<MeasuredRun>> runs = LoadMeasuredRuns(kDataDir, datasets[0]);
  ASSERT_TRUE(runs.ok()) << runs.status();
  EXPECT_EQ(runs->size(), 53u);  // the FP8 rows: Llama 3.1, GPT-3 175B, Nemotron-4
  for (const MeasuredRun& run : *runs) {
    EXPECT_TRUE(run.training.fp8());
    EXPECT_FALSE(run.training.fp8_param_gather());
    EXPECT_NEAR(MeasuredTflopsPerGpu(run), 750, 150) << run.model_name << " line " << run.line;
  }
}

TEST(MeasuredRunsTest, ANonPositiveStepTimeNamesItsColumn) {
  // Korthikanti et al.'s first row with its selective-recompute time made negative (a fuzzer's
  // find): the run would pass as completed in -0.1 s.
  const std::string directory = absl::StrCat(getenv("TEST_TMPDIR"), "/bad_step_time");
  ASSERT_EQ(mkdir(directory.c_str(), 0755), 0);
  const std::string file = "korthikanti2022_table5_a100.csv";
  std::ifstream in(absl::StrCat(kDataDir, "/", file));
  std::string header, row;
  ASSERT_TRUE(std::getline(in, header) && std::getline(in, row));
  const std::string good = ",1.42,1.1,";
  ASSERT_NE(row.find(good), std::string::npos);
  row.replace(row.find(good), good.size(), ",1.42,-.1,");
  std::ofstream(absl::StrCat(directory, "/", file)) << header << "\n" << row << "\n";
  for (const MeasuredDataset& dataset : MeasuredDatasets()) {
    if (dataset.file != file) continue;
    const absl::Status status = LoadMeasuredRuns(directory, dataset).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(status.message().find("column \"iter_time_seqpar_plus_selective_s\" gives a step "
                                    "time of -0.1 s: a completed run's is finite and > 0"),
              std::string::npos)
        << status;
  }
}

constexpr char kMoeTable[] = "megatron_bridge_moe_h100.csv";
constexpr char kDgxcMoeTable[] = "nvidia_dgxc_moe_h100.csv";

// The fp8 rows of the Megatron-Bridge table, MoeDatasets()' first.
MeasuredDataset MoeDataset() {
  EXPECT_EQ(MoeDatasets().size(), 3u);
  return MoeDatasets().front();
}

TEST(MeasuredRunsTest, MoeTablesAreApartFromTheDenseTables) {
  const std::vector<MeasuredDataset> moe = MoeDatasets();
  ASSERT_EQ(moe.size(), 3u);
  EXPECT_EQ(moe[0].file, kMoeTable);
  EXPECT_TRUE(moe[0].fp8);
  EXPECT_EQ(moe[1].file, kDgxcMoeTable);
  EXPECT_TRUE(moe[1].fp8);
  EXPECT_EQ(moe[2].file, kDgxcMoeTable);
  EXPECT_FALSE(moe[2].fp8);
  for (const MeasuredDataset& table : moe) {
    EXPECT_TRUE(table.in_fit) << table.file;
    for (const MeasuredDataset& dataset : MeasuredDatasets()) EXPECT_NE(dataset.file, table.file);
    for (const MeasuredDataset& dataset : Fp8Datasets()) EXPECT_NE(dataset.file, table.file);
  }
}

TEST(MeasuredRunsTest, DgxcLlama4RowsFieldByField) {
  const std::vector<MeasuredDataset> moe = MoeDatasets();
  ASSERT_EQ(moe.size(), 3u);
  absl::StatusOr<std::vector<MeasuredRun>> fp8 = LoadMeasuredRuns(kDataDir, moe[1]);
  ASSERT_TRUE(fp8.ok()) << fp8.status();
  absl::StatusOr<std::vector<MeasuredRun>> bf16 = LoadMeasuredRuns(kDataDir, moe[2]);
  ASSERT_TRUE(bf16.ok()) << bf16.status();
  ASSERT_EQ(fp8->size(), 1u);
  ASSERT_EQ(bf16->size(), 1u);
  // Line 3: dgxc-benchmarking v25.05, Llama 4 Maverick on 512 H100, FP8, 2176574 tokens/s.
  const MeasuredRun& run = fp8->front();
  EXPECT_EQ(run.line, 3);
  EXPECT_EQ(run.dataset, kDgxcMoeTable);
  EXPECT_EQ(run.software, "NeMo 25.04.01");
  EXPECT_EQ(run.group, "Llama4-Maverick tp4 pp1 cp1 vp1 ep128 etp4 mbs1 alltoall");
  EXPECT_EQ(run.model.moe().num_experts, 128);
  EXPECT_EQ(run.model.moe().router_top_k, 1);
  EXPECT_EQ(run.model.MoeLayerCount(), 24);  // every other layer
  EXPECT_TRUE(run.training.fp8());
  EXPECT_TRUE(run.training.tp_comm_overlap());
  EXPECT_FALSE(run.training.fp32_gradients());
  EXPECT_EQ(run.training.moe_capacity_factor(), 1.0);
  EXPECT_EQ(run.training.moe_token_dispatcher(), TokenDispatcher::kAllToAll);
  EXPECT_TRUE(run.training.moe_grouped_gemm());
  EXPECT_FALSE(run.training.moe_expert_parallel_overlap());
  EXPECT_TRUE(run.training.moe_shared_expert_overlap());  // Llama4Config
  EXPECT_EQ(run.cluster.num_nodes(), 64);
  EXPECT_EQ(run.config.tp(), 4);
  EXPECT_EQ(run.config.pp(), 1);
  EXPECT_EQ(run.config.dp(), 128);
  EXPECT_EQ(run.config.ep(), 128);
  EXPECT_EQ(run.config.etp(), 4);
  EXPECT_TRUE(run.config.sequence_parallel());
  EXPECT_DOUBLE_EQ(run.step_seconds, 1024.0 * 8192.0 / (4251.1 * 512.0));
  // Line 2: the same configuration in bf16, the same series.
  EXPECT_EQ(bf16->front().line, 2);
  EXPECT_FALSE(bf16->front().training.fp8());
  EXPECT_EQ(bf16->front().group, run.group);
  EXPECT_DOUBLE_EQ(bf16->front().step_seconds, 1024.0 * 8192.0 / (3702.8 * 512.0));
  // Each reader skips the other precision's row, saying so.
  absl::StatusOr<std::vector<SkippedRow>> skipped = SkippedMoeRows(kDataDir, moe[1]);
  ASSERT_TRUE(skipped.ok()) << skipped.status();
  ASSERT_EQ(skipped->size(), 1u);
  EXPECT_EQ((*skipped)[0].line, 2);
  EXPECT_EQ((*skipped)[0].reason, "bf16 row; the dataset reads fp8 rows");
}

TEST(MeasuredRunsTest, SkippedMoeRowsRefusesADenseTable) {
  const absl::Status status = SkippedMoeRows(kDataDir, MeasuredDatasets().front()).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("not a mixture-of-experts table"), std::string::npos) << status;
}

TEST(MeasuredRunsTest, EveryMoeRowIsReadOrSkippedWithItsReason) {
  absl::StatusOr<std::vector<MeasuredRun>> runs = LoadMeasuredRuns(kDataDir, MoeDataset());
  ASSERT_TRUE(runs.ok()) << runs.status();
  absl::StatusOr<std::vector<SkippedRow>> skipped = SkippedMoeRows(kDataDir, MoeDataset());
  ASSERT_TRUE(skipped.ok()) << skipped.status();
  std::vector<int64_t> read_lines;
  for (const MeasuredRun& run : *runs) {
    read_lines.push_back(run.line);
    EXPECT_TRUE(run.model.is_moe()) << run.line;
    EXPECT_TRUE(run.training.fp8()) << run.line;
    // NVIDIA's model TFLOP/s of these rows are 118 to 253; the estimator counts model FLOPs
    // its own way, so only the range is checked.
    EXPECT_GT(MeasuredTflopsPerGpu(run), 80) << run.line;
    EXPECT_LT(MeasuredTflopsPerGpu(run), 400) << run.line;
  }
  // The Qwen3-30B-A3B and Qwen3-235B-A22B rows, of 25.11, 25.09 (30B), 26.02, 26.02.01,
  // 26.04, 26.04.01 and 26.06 (30B).
  EXPECT_EQ(read_lines, (std::vector<int64_t>{2, 4, 7, 9, 10, 12, 13, 16, 17, 20, 21, 23}));
  std::vector<std::pair<int64_t, std::string>> skipped_rows;
  for (const SkippedRow& row : *skipped) {
    EXPECT_FALSE(row.reason.empty()) << row.line;
    skipped_rows.push_back({row.line, row.model_name});
  }
  EXPECT_EQ(skipped_rows, (std::vector<std::pair<int64_t, std::string>>{{3, "GPT-OSS-120B"},
                                                                        {5, "Qwen3-235B-A22B"},
                                                                        {6, "DeepSeek-V3"},
                                                                        {8, "GPT-OSS-120B"},
                                                                        {11, "GPT-OSS-120B"},
                                                                        {14, "Nemotron-3-Nano"},
                                                                        {15, "GPT-OSS-120B"},
                                                                        {18, "Nemotron-3-Nano"},
                                                                        {19, "GPT-OSS-120B"},
                                                                        {22, "Nemotron-3-Nano"},
                                                                        {24, "Nemotron-3-Nano"}}));
  ASSERT_EQ(skipped->size(), 11u);
  EXPECT_EQ((*skipped)[1].reason, "precision not stated by the source or its recipe");
  EXPECT_NE((*skipped)[2].reason.find("multi-head latent attention"), std::string::npos);
  // Every data row (23, lines 2 to 24) is one or the other.
  EXPECT_EQ(runs->size() + skipped->size(), 23u);
}

TEST(MeasuredRunsTest, ExcludedMoeRowsCarryTheirCitedReason) {
  absl::StatusOr<std::vector<MeasuredRun>> runs = LoadMeasuredRuns(kDataDir, MoeDataset());
  ASSERT_TRUE(runs.ok()) << runs.status();
  std::vector<int64_t> excluded_lines;
  for (const MeasuredRun& run : *runs) {
    if (run.excluded_reason.empty()) continue;
    excluded_lines.push_back(run.line);
    // Both rows are Qwen3-30B-A3B's dropless regression, NVIDIA's Megatron-Bridge issue #1998.
    EXPECT_NE(run.excluded_reason.find("issue #1998"), std::string::npos) << run.line;
  }
  EXPECT_EQ(excluded_lines, (std::vector<int64_t>{2, 9}));
  for (const MeasuredDataset& dataset : {MoeDatasets()[1], MoeDatasets()[2]}) {
    absl::StatusOr<std::vector<MeasuredRun>> dgxc = LoadMeasuredRuns(kDataDir, dataset);
    ASSERT_TRUE(dgxc.ok()) << dgxc.status();
    for (const MeasuredRun& run : *dgxc) EXPECT_TRUE(run.excluded_reason.empty()) << run.line;
  }
}

TEST(MeasuredRunsTest, MoeRowFieldByField) {
  absl::StatusOr<std::vector<MeasuredRun>> runs = LoadMeasuredRuns(kDataDir, MoeDataset());
  ASSERT_TRUE(runs.ok()) << runs.status();
  // Line 16: NeMo 26.04, Qwen3-30B-A3B, 16 GPUs, FP8, GBS 1024, MBS 1, seq 4096, tp 1 pp 1
  // cp 1, no VP, ep 16, 8901 tokens/s/GPU; recipe: etp 1, flex (hybridep), dropless.
  const MeasuredRun& run = (*runs)[7];
  ASSERT_EQ(run.line, 16);
  EXPECT_EQ(run.dataset, kMoeTable);
  EXPECT_EQ(run.model_name, "Qwen3-30B-A3B");
  EXPECT_EQ(run.software, "NeMo 26.04");
  EXPECT_EQ(run.group, "Qwen3-30B-A3B tp1 pp1 cp1 vp1 ep16 etp1 mbs1 flex (hybridep)");
  EXPECT_EQ((*runs)[0].training.moe_token_dispatcher(), TokenDispatcher::kAllToAll);  // line 2
  EXPECT_EQ((*runs)[5].line, 12);
  EXPECT_EQ((*runs)[5].training.moe_token_dispatcher(), TokenDispatcher::kFlexDeepEp);
  // The preset's dimensions under the table's name.
  absl::StatusOr<ModelSpec> preset = FindModelPreset("qwen3-30b-a3b");
  ASSERT_TRUE(preset.ok()) << preset.status();
  EXPECT_EQ(run.model.name(), "Qwen3-30B-A3B");
  EXPECT_EQ(run.model.hidden_size(), preset->hidden_size());
  EXPECT_EQ(run.model.num_layers(), preset->num_layers());
  EXPECT_EQ(run.model.head_dim(), preset->head_dim());
  EXPECT_EQ(run.model.moe().num_experts, 128);
  EXPECT_EQ(run.model.moe().expert_ffn_hidden_size, preset->moe().expert_ffn_hidden_size);
  EXPECT_EQ(run.model.moe().router_top_k, 8);
  EXPECT_EQ(run.cluster.gpu().name, "h100-80gb");
  EXPECT_EQ(run.cluster.num_nodes(), 2);
  EXPECT_EQ(run.cluster.gpus_per_node(), 8);
  EXPECT_EQ(run.training.global_batch_size(), 1024);
  EXPECT_EQ(run.training.seq_len(), 4096);
  EXPECT_TRUE(run.training.fp8());
  EXPECT_FALSE(run.training.fp8_param_gather());
  EXPECT_FALSE(run.training.fp32_gradients());
  EXPECT_TRUE(run.training.distributed_optimizer());
  EXPECT_TRUE(run.training.tp_comm_overlap());
  EXPECT_EQ(run.training.moe_capacity_factor(), 0);
  EXPECT_EQ(run.training.moe_token_dispatcher(), TokenDispatcher::kFlexHybridEp);
  EXPECT_TRUE(run.training.moe_grouped_gemm());
  EXPECT_FALSE(run.training.moe_expert_parallel_overlap());        // v0.4.0: Qwen3-30B-A3B off
  EXPECT_TRUE((*runs)[8].training.moe_expert_parallel_overlap());  // line 17: 235B, on
  EXPECT_EQ(run.config.dp(), 16);
  EXPECT_EQ(run.config.tp(), 1);
  EXPECT_EQ(run.config.pp(), 1);
  EXPECT_EQ(run.config.cp(), 1);
  EXPECT_EQ(run.config.virtual_pipeline(), 1);
  EXPECT_EQ(run.config.ep(), 16);
  EXPECT_EQ(run.config.etp(), 1);
  EXPECT_EQ(run.config.micro_batch(), 1);
  EXPECT_EQ(run.config.recompute(), Recompute::kNone);
  EXPECT_TRUE(run.completed);
  EXPECT_DOUBLE_EQ(run.step_seconds, 1024.0 * 4096.0 / (8901.0 * 16.0));

  // Line 4, NeMo 25.09: token drop at the capacity factor the recipe sets (apply_moe_token_drop).
  ASSERT_EQ((*runs)[1].line, 4);
  EXPECT_EQ((*runs)[1].training.moe_capacity_factor(), 1.0);
  // Line 7, NeMo 25.11 Qwen3-235B-A22B: tp 2 with sequence parallelism, pp 8 vp 4, ep 32.
  const MeasuredRun& big = (*runs)[2];
  ASSERT_EQ(big.line, 7);
  EXPECT_EQ(big.config.dp(), 16);
  EXPECT_TRUE(big.config.sequence_parallel());
  EXPECT_EQ(big.config.virtual_pipeline(), 4);
  EXPECT_EQ(big.config.ep(), 32);
  EXPECT_EQ(big.config.etp(), 1);
  EXPECT_FALSE(big.training.tp_comm_overlap());
}

TEST(MeasuredRunsTest, ABadMoeCellNamesFileLineAndColumn) {
  const std::string directory = absl::StrCat(getenv("TEST_TMPDIR"), "/bad_moe_cell");
  ASSERT_EQ(mkdir(directory.c_str(), 0755), 0);
  std::ifstream in(absl::StrCat(kDataDir, "/", kMoeTable));
  std::string header, row;
  ASSERT_TRUE(std::getline(in, header) && std::getline(in, row));
  const std::string good = ",alltoall,";
  ASSERT_NE(row.find(good), std::string::npos);
  row.replace(row.find(good), good.size(), ",alltoal,");
  const std::string path = absl::StrCat(directory, "/", kMoeTable);
  std::ofstream(path) << header << "\n" << row << "\n";
  const absl::Status status = LoadMeasuredRuns(directory, MoeDataset()).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            absl::StrCat(path,
                         ":2: column \"token_dispatcher\": \"alltoal\" is not alltoall, "
                         "allgather, flex (deepep) or flex (hybridep)"));
}

TEST(MeasuredRunsTest, GptRowsAreNotGated) {
  for (const MeasuredRun& run : Load("narayanan2021_table1_a100.csv")) {
    EXPECT_FALSE(run.model.gated_mlp());
    EXPECT_EQ(run.config.recompute(), Recompute::kFull);
  }
}

TEST(MeasuredRunsTest, CheckedInParametersAreAFixedPointOfTheFit) {
  // The checked-in Hopper values fit the H100 tables better than the untuned defaults.
  std::vector<MeasuredRun> hopper = Load("nvidia_dgxc_h100.csv");
  for (MeasuredRun& run : Load("megatron_core_h100_weak_scaling.csv")) hopper.push_back(run);
  const std::vector<PerformanceObservation> observations = FitObservations(hopper);
  EXPECT_EQ(observations.size(), 62u);
  const double fitted =
      MeanSquaredLogError(observations, FittedPerformanceParameters(GpuArchitecture::kHopper));
  EXPECT_LT(fitted, MeanSquaredLogError(observations, PerformanceParameters()));
  EXPECT_LT(std::sqrt(fitted), 0.06);  // RMS log error of the fit
}

}  // namespace
}  // namespace paratune
