#include "worker/replay_backend.h"

#include <memory>
#include <string>

#include "common/clock.h"
#include "estimator/performance_model.h"
#include "estimator/performance_parameters.h"
#include "estimator/short_probe.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "worker/backend_conformance.h"
#include "worker/probe/probe_spec.h"
#include "worker/probe_pipeline.h"

namespace paratune {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::Each;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kRunTable[] = "worker/testdata/replay_runs.csv";
constexpr char kFujiiTable[] = "data/measured/llama31_8b_4d_abci_tsubame.csv";

std::unique_ptr<ReplayBackend> MakeBackend(const v1::ReplayConfig& config,
                                           absl::Duration probe_time = absl::ZeroDuration()) {
  ReplayBackend::Options options;
  options.probe_time = probe_time;
  absl::StatusOr<std::unique_ptr<ReplayBackend>> backend = ReplayBackend::Create(config, options);
  EXPECT_TRUE(backend.ok()) << backend.status();
  return backend.ok() ? *std::move(backend) : nullptr;
}

v1::ReplayConfig RunTableConfig() {
  v1::ReplayConfig config;
  config.add_run_tables(kRunTable);
  return config;
}

v1::ReplayConfig FujiiConfig() {
  v1::ReplayConfig config;
  config.add_published_tables(kFujiiTable);
  return config;
}

// The runnable probe of the conformance suite is the first row of the test table; its
// too-large variant (Llama-3.1-70B on A100-40GB) the second, measured out of memory.
INSTANTIATE_TEST_SUITE_P(Replay, BackendConformanceTest,
                         ::testing::Values(BackendConformanceParam{
                             "replay",
                             [] { return MakeBackend(RunTableConfig(), absl::Milliseconds(20)); },
                             SmallConformanceAssignment()}),
                         BackendConformanceParamName);

// The performance model's step time for `assignment`, as the sim predicts it.
double PredictedStepSeconds(const v1::ProbeAssignment& assignment) {
  absl::StatusOr<ProbeSpec> spec = ProbeSpec::FromAssignment(assignment);
  EXPECT_TRUE(spec.ok()) << spec.status();
  if (!spec.ok()) return 0;
  return PredictPerformance(spec->model(), spec->training(), spec->cluster(), spec->config(),
                            DefaultPerformanceParameters(spec->cluster().gpu()))
      .step_time_seconds;
}

// The result the worker makes of `backend`'s run of `assignment`.
v1::ProbeResult RunOk(ProbeBackend& backend, const v1::ProbeAssignment& assignment) {
  SoloProbeContext context;
  return RunProbe(backend, assignment, context, *RealClock());
}

TEST(ReplayBackendTest, AMeasuredRunIsReplayedAndSaysSo) {
  std::unique_ptr<ReplayBackend> backend = MakeBackend(RunTableConfig());
  ASSERT_NE(backend, nullptr);
  const v1::ProbeResult result = RunOk(*backend, SmallConformanceAssignment());
  EXPECT_EQ(result.outcome(), v1::PROBE_OK);
  EXPECT_FALSE(result.simulated());
  EXPECT_THAT(result.step_times_seconds(), Each(0.5));
  EXPECT_EQ(result.step_times_seconds_size(), SmallConformanceAssignment().timed_steps());
  EXPECT_EQ(result.peak_memory_bytes(), static_cast<int64_t>(21.5 * (1 << 30)));
  // dp 8: every phase but the tensor, context and pipeline collectives, as the run measured it.
  EXPECT_THAT(result.measured(), ElementsAre("gemm", "attention", "elementwise", "dp_collectives",
                                             "optimizer", "peak_memory"));
  EXPECT_THAT(result.modelled(), ElementsAre("wall_time"));
  EXPECT_THAT(result.message(),
              AllOf(HasSubstr("replay of a measurement, not run here: replay_runs.csv:2 (invented "
                              "for worker tests"),
                    HasSubstr("each of the 4 step times is that one value"),
                    HasSubstr("; peak memory 21.50 GiB measured")));
}

TEST(ReplayBackendTest, AReplayedRunCostsItsStartUpAndFullStepsAtTheMeasuredTime) {
  std::unique_ptr<ReplayBackend> backend = MakeBackend(RunTableConfig());
  ASSERT_NE(backend, nullptr);
  v1::ProbeAssignment assignment = SmallConformanceAssignment();
  assignment.set_warmup_steps(2);
  assignment.set_timed_steps(6);
  // Short steps asked for: a replay has only the full step's time, and runs full steps.
  assignment.add_micro_batch_counts(2);
  assignment.add_micro_batch_counts(4);
  const v1::ProbeResult result = RunOk(*backend, assignment);
  EXPECT_EQ(result.outcome(), v1::PROBE_OK);
  EXPECT_DOUBLE_EQ(result.wall_seconds(), kProbeStartupSeconds + 8 * 0.5);
  EXPECT_DOUBLE_EQ(result.startup_seconds(), kProbeStartupSeconds);
  EXPECT_EQ(result.step_times_seconds_size(), 6);
  EXPECT_FALSE(result.simulated());
  EXPECT_THAT(result.message(),
              HasSubstr("wall_seconds (34 s) is modelled, not measured: 30 s start-up and 8 full "
                        "steps (2 warm-up, 6 timed) at the measured mean step time"));
}

TEST(ReplayBackendTest, AReplayedRunLongerThanItsDeadlineTimesOut) {
  std::unique_ptr<ReplayBackend> backend = MakeBackend(RunTableConfig());
  ASSERT_NE(backend, nullptr);
  v1::ProbeAssignment assignment = SmallConformanceAssignment();
  assignment.set_warmup_steps(2);
  assignment.set_timed_steps(6);
  assignment.set_deadline_seconds(33);  // the probe would take 34 s
  const v1::ProbeResult result = RunOk(*backend, assignment);
  EXPECT_EQ(result.outcome(), v1::PROBE_TIMEOUT);
  EXPECT_DOUBLE_EQ(result.wall_seconds(), 33);
  EXPECT_TRUE(result.step_times_seconds().empty());
  EXPECT_THAT(result.message(),
              HasSubstr("it would take 34 s (30 s start-up and 8 full steps (2 warm-up, 6 timed) "
                        "at the measured mean step time), over its deadline of 33 s, so it was "
                        "stopped there"));
}

TEST(ReplayBackendTest, AMeasuredOutOfMemoryCostsStartUpAndOnePredictedStep) {
  std::unique_ptr<ReplayBackend> backend = MakeBackend(RunTableConfig());
  ASSERT_NE(backend, nullptr);
  v1::ProbeAssignment assignment = SmallConformanceAssignment();
  assignment.mutable_model()->set_preset("llama3.1-70b");
  assignment.mutable_cluster()->mutable_gpu()->set_type("a100-40gb");
  const v1::ProbeResult result = RunOk(*backend, assignment);
  EXPECT_EQ(result.outcome(), v1::PROBE_OUT_OF_MEMORY);
  EXPECT_DOUBLE_EQ(result.wall_seconds(), kProbeStartupSeconds + PredictedStepSeconds(assignment));
  EXPECT_THAT(result.modelled(), ElementsAre("wall_time"));
  EXPECT_THAT(result.message(),
              AllOf(HasSubstr("replay_runs.csv:3 (invented for worker tests"),
                    HasSubstr("ran out of memory"),
                    HasSubstr("is modelled, not measured: 30 s start-up and one step at the "
                              "performance model's predicted")));
}

TEST(ReplayBackendTest, SequenceParallelOnlyMattersWithTensorParallelism) {
  std::unique_ptr<ReplayBackend> backend = MakeBackend(RunTableConfig());
  ASSERT_NE(backend, nullptr);
  v1::ProbeAssignment assignment = SmallConformanceAssignment();
  assignment.mutable_config()->set_sequence_parallel(true);  // the row says false, at tp 1
  EXPECT_EQ(RunOk(*backend, assignment).outcome(), v1::PROBE_OK);

  assignment.mutable_config()->set_data_parallel(4);
  assignment.mutable_config()->set_tensor_parallel(2);
  assignment.mutable_config()->set_sequence_parallel(false);  // the rows say true, at tp 2
  EXPECT_EQ(RunOk(*backend, assignment).outcome(), v1::PROBE_NOT_MEASURED);
}

TEST(ReplayBackendTest, TheFirstOfSeveralMeasurementsIsReplayedAndTheOthersNamed) {
  std::unique_ptr<ReplayBackend> backend = MakeBackend(RunTableConfig());
  ASSERT_NE(backend, nullptr);
  v1::ProbeAssignment assignment = SmallConformanceAssignment();
  assignment.mutable_config()->set_data_parallel(4);
  assignment.mutable_config()->set_tensor_parallel(2);
  const v1::ProbeResult result = RunOk(*backend, assignment);
  EXPECT_EQ(result.outcome(), v1::PROBE_OK);
  EXPECT_THAT(result.step_times_seconds(), Each(0.4));
  EXPECT_EQ(result.peak_memory_bytes(), 0);
  EXPECT_THAT(result.measured(), Not(Contains("peak_memory")));
  EXPECT_THAT(result.message(), HasSubstr("also measured in replay_runs.csv:5 ("));
  EXPECT_THAT(result.message(), HasSubstr("0.45 s"));
}

TEST(ReplayBackendTest, AnUnmeasuredConfigurationIsNotMeasuredNeverInvented) {
  std::unique_ptr<ReplayBackend> backend = MakeBackend(RunTableConfig());
  ASSERT_NE(backend, nullptr);
  v1::ProbeAssignment assignment = SmallConformanceAssignment();
  assignment.mutable_config()->set_micro_batch_size(2);
  const v1::ProbeResult result = RunOk(*backend, assignment);
  EXPECT_EQ(result.outcome(), v1::PROBE_NOT_MEASURED);
  EXPECT_TRUE(result.step_times_seconds().empty());
  EXPECT_EQ(result.model_tflops_per_gpu(), 0);
  EXPECT_EQ(result.wall_seconds(), 0);
  EXPECT_THAT(result.message(),
              AllOf(HasSubstr("not measured: no run of llama3.2-1b dp8 tp1 pp1 cp1 mbs2 on 1 x 8 "
                              "h100-80gb, global batch 64, sequence 2048"),
                    HasSubstr("4 runs in 1 table (replay_runs.csv)"), HasSubstr("never invents"),
                    HasSubstr("wall_seconds (0 s) is modelled, not measured: nothing ran")));
}

TEST(ReplayBackendTest, AnyOtherTrainingOptionIsAnotherExperiment) {
  std::unique_ptr<ReplayBackend> backend = MakeBackend(RunTableConfig());
  ASSERT_NE(backend, nullptr);
  v1::ProbeAssignment assignment = SmallConformanceAssignment();
  assignment.mutable_training()->set_fp32_gradients(false);
  EXPECT_EQ(RunOk(*backend, assignment).outcome(), v1::PROBE_NOT_MEASURED);
  assignment = SmallConformanceAssignment();
  assignment.mutable_cluster()->mutable_gpu()->set_memory_bytes(64LL << 30);
  EXPECT_EQ(RunOk(*backend, assignment).outcome(), v1::PROBE_NOT_MEASURED);
}

// Fujii et al.'s table: its TSUBAME 4.0 rows are H100-94GB in 4-GPU nodes, its ABCI rows
// A100-40GB in 8-GPU nodes, global batch 1024.
v1::ProbeAssignment FujiiAssignment(const std::string& gpu, int64_t nodes, int64_t per_node,
                                    int64_t dp, int64_t tp, int64_t pp, int64_t mbs) {
  v1::ProbeAssignment assignment = SmallConformanceAssignment();
  assignment.mutable_model()->set_preset("llama3.1-8b");
  assignment.mutable_training()->set_global_batch_size(1024);
  assignment.mutable_training()->set_seq_len(8192);
  assignment.mutable_cluster()->mutable_gpu()->set_type(gpu);
  assignment.mutable_cluster()->set_num_nodes(nodes);
  assignment.mutable_cluster()->set_gpus_per_node(per_node);
  v1::ParallelConfig& config = *assignment.mutable_config();
  config.set_data_parallel(dp);
  config.set_tensor_parallel(tp);
  config.set_pipeline_parallel(pp);
  config.set_context_parallel(1);
  config.set_micro_batch_size(mbs);
  // These runs take minutes a step: a day's deadline, so that they are replayed, not timed out.
  assignment.set_deadline_seconds(86'400);
  return assignment;
}

TEST(ReplayBackendTest, FujiiTableReplaysItsMeasuredThroughput) {
  std::unique_ptr<ReplayBackend> backend = MakeBackend(FujiiConfig());
  ASSERT_NE(backend, nullptr);
  // Line 111: TSUBAME 4.0, s 8192, tp 2 cp 1 pp 1 mbs 1 on 8 GPUs: 443.45 TFLOP/s per GPU.
  v1::ProbeResult tsubame = RunOk(*backend, FujiiAssignment("h100-94gb", 2, 4, 4, 2, 1, 1));
  EXPECT_EQ(tsubame.outcome(), v1::PROBE_OK) << tsubame.message();
  EXPECT_NEAR(tsubame.model_tflops_per_gpu(), 443.45, 1e-6);
  EXPECT_THAT(tsubame.message(),
              HasSubstr("llama31_8b_4d_abci_tsubame.csv:111 (TSUBAME 4.0 s=8192 8 GPUs)"));
  EXPECT_EQ(tsubame.peak_memory_bytes(), 0);
  // Line 2: ABCI, tp 4 pp 2 mbs 1 on one 8-GPU node: 182.6.
  v1::ProbeResult abci = RunOk(*backend, FujiiAssignment("a100-40gb", 1, 8, 1, 4, 2, 1));
  EXPECT_EQ(abci.outcome(), v1::PROBE_OK) << abci.message();
  EXPECT_NEAR(abci.model_tflops_per_gpu(), 182.6, 1e-6);
  // The same configuration on the other system was not measured.
  EXPECT_EQ(RunOk(*backend, FujiiAssignment("h100-80gb", 2, 4, 4, 2, 1, 1)).outcome(),
            v1::PROBE_NOT_MEASURED);
}

TEST(ReplayBackendTest, FujiiDashCellsAreFailuresNotOutOfMemory) {
  std::unique_ptr<ReplayBackend> backend = MakeBackend(FujiiConfig());
  ASSERT_NE(backend, nullptr);
  // Line 123: tp 2 pp 1 mbs 4 on 8 TSUBAME GPUs, "-".
  const v1::ProbeAssignment assignment = FujiiAssignment("h100-94gb", 2, 4, 4, 2, 1, 4);
  const v1::ProbeResult result = RunOk(*backend, assignment);
  EXPECT_EQ(result.outcome(), v1::PROBE_CRASH);
  EXPECT_FALSE(result.simulated());
  EXPECT_TRUE(result.step_times_seconds().empty());
  EXPECT_EQ(result.model_tflops_per_gpu(), 0);
  EXPECT_EQ(result.peak_memory_bytes(), 0);
  EXPECT_DOUBLE_EQ(result.wall_seconds(), kProbeStartupSeconds + PredictedStepSeconds(assignment));
  EXPECT_GT(result.wall_seconds(), kProbeStartupSeconds);
  EXPECT_THAT(result.modelled(), ElementsAre("wall_time"));
  EXPECT_THAT(
      result.message(),
      AllOf(HasSubstr("llama31_8b_4d_abci_tsubame.csv:123 (TSUBAME 4.0 s=8192 8 GPUs): the "
                      "source's run failed without a result (out of memory, infeasible or "
                      "failed; it does not say which, so it is not reported as out of memory)"),
            HasSubstr("is modelled, not measured: 30 s start-up and one step at the "
                      "performance model's predicted"),
            HasSubstr("as a real run fails in its first step")));
}

TEST(ReplayBackendTest, EveryPublishedTableLoads) {
  v1::ReplayConfig config;
  for (const char* file : {"nvidia_dgxc_h100.csv", "megatron_core_h100_weak_scaling.csv",
                           "narayanan2021_table1_a100.csv", "korthikanti2022_table5_a100.csv",
                           "llama31_8b_4d_abci_tsubame.csv", "megatron_bridge_moe_h100.csv"}) {
    config.add_published_tables(std::string("data/measured/") + file);
  }
  std::unique_ptr<ReplayBackend> backend = MakeBackend(config);
  ASSERT_NE(backend, nullptr);
  // The replayed message names the tables it searched.
  v1::ProbeAssignment unmeasured = SmallConformanceAssignment();
  unmeasured.mutable_config()->set_micro_batch_size(2);
  EXPECT_THAT(RunOk(*backend, unmeasured).message(), HasSubstr("runs in 6 tables ("));
}

absl::Status LoadError(const v1::ReplayConfig& config) {
  return ReplayBackend::Create(config, ReplayBackend::Options()).status();
}

TEST(ReplayBackendTest, BadTablesAreRejectedNamingTheField) {
  EXPECT_EQ(LoadError(v1::ReplayConfig()),
            absl::InvalidArgumentError("replay (no tables) must list published_tables or "
                                       "run_tables for the replay backend"));
  v1::ReplayConfig unknown;
  unknown.add_published_tables("data/measured/mine.csv");
  EXPECT_THAT(LoadError(unknown).message(),
              AllOf(HasSubstr("replay.published_tables[0] (\"data/measured/mine.csv\"): not a "
                              "table measured/measured_runs reads"),
                    HasSubstr("llama31_8b_4d_abci_tsubame.csv")));
  v1::ReplayConfig missing;
  missing.add_run_tables("worker/testdata/none.csv");
  EXPECT_EQ(LoadError(missing).code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(LoadError(missing).message(),
              HasSubstr("replay.run_tables[0] (\"worker/testdata/none.csv\")"));
}

TEST(ReplayBackendTest, BadRunTableCellsNameTheLineAndColumn) {
  const struct {
    const char* file;
    const char* error;
  } cases[] = {
      {"worker/testdata/replay_runs_bad_outcome.csv",
       "replay_runs_bad_outcome.csv:3: column \"outcome\": \"maybe\" is not ok or "
       "out_of_memory"},
      {"worker/testdata/replay_runs_bad_model.csv",
       "replay_runs_bad_model.csv:2: column \"model\": "},
      {"worker/testdata/replay_runs_bad_config.csv",
       "replay_runs_bad_config.csv:2: config.tensor_parallel (3) does not divide"},
  };
  for (const auto& c : cases) {
    v1::ReplayConfig config;
    config.add_run_tables(c.file);
    const absl::Status status = LoadError(config);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << c.file;
    EXPECT_THAT(status.message(), HasSubstr(c.error));
    EXPECT_THAT(status.message(), HasSubstr("replay.run_tables[0]"));
  }
}

}  // namespace
}  // namespace paratune
