#include "measured/measured_runs.h"

#include <sys/stat.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>

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
