#include "worker/cuda_probe_outcome.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/probe_report.pb.h"
#include "worker/probe/test_assignments.h"

namespace paratune {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Ending = SubprocessResult::Ending;

SubprocessResult Ended(Ending ending, int code_or_signal, std::string stderr_tail) {
  SubprocessResult process;
  process.ending = ending;
  if (ending == Ending::kSignaled) {
    process.signal = code_or_signal;
  } else {
    process.exit_code = code_or_signal;
  }
  process.stderr_tail = std::move(stderr_tail);
  process.wall_time = absl::Seconds(3);
  return process;
}

// Llama-3.2-1B, global batch 8 on one GPU: 8 micro-batches per step, 3 timed steps.
ProbeSpec OneGpu() {
  return *ProbeSpec::FromAssignment(TestAssignment("llama3.2-1b", 8, 2048, 1, 1, 1, 1, 1));
}

v1::ProbeReport Report(v1::ProbeOutcome outcome, const std::string& error) {
  v1::ProbeReport report;
  report.set_outcome(outcome);
  report.set_error(error);
  return report;
}

ProbeRun FromReport(const v1::ProbeReport& report) {
  return RunFromProbeProcess(OneGpu(), Ended(Ending::kExited, 0, ""), report.SerializeAsString());
}

TEST(CudaProbeOutcomeTest, AWrittenReportIsTheRun) {
  v1::ProbeReport report = Report(v1::PROBE_OK, "");
  v1::ShortSteps& steps = *report.add_timed_steps();
  steps.set_micro_batches(8);
  for (double seconds : {0.25, 0.26, 0.24}) steps.add_step_times_seconds(seconds);
  report.set_peak_memory_bytes(40LL << 30);
  report.mutable_measurements()->set_gpu_name("NVIDIA H100 80GB HBM3");
  const ProbeRun run = FromReport(report);
  EXPECT_EQ(run.outcome, v1::PROBE_OK);
  EXPECT_EQ(run.source, FigureSource::kMeasured);
  ASSERT_EQ(run.timed_steps.size(), 1u);
  EXPECT_THAT(run.timed_steps[0].step_times_seconds, ElementsAre(0.25, 0.26, 0.24));
  EXPECT_EQ(run.peak_memory_bytes, 40LL << 30);
  EXPECT_EQ(run.detail, "paratune-probe on 1 x NVIDIA H100 80GB HBM3");
}

TEST(CudaProbeOutcomeTest, TheProbesOwnOutOfMemoryIsKept) {
  const ProbeRun run = FromReport(Report(v1::PROBE_OUT_OF_MEMORY, "cudaMalloc of weights"));
  EXPECT_EQ(run.outcome, v1::PROBE_OUT_OF_MEMORY);
  EXPECT_EQ(run.detail, "cudaMalloc of weights");
}

TEST(CudaProbeOutcomeTest, StepsThatAreNotWhatTheProbeWasToRunAreACrash) {
  v1::ProbeReport report = Report(v1::PROBE_OK, "");
  v1::ShortSteps& steps = *report.add_timed_steps();
  steps.set_micro_batches(4);
  const ProbeRun run = FromReport(report);
  EXPECT_EQ(run.outcome, v1::PROBE_CRASH);
  EXPECT_THAT(run.detail,
              HasSubstr("paratune-probe's report: timed_steps[0].micro_batches (4) is not 8"));
  EXPECT_THAT(run.detail, HasSubstr("same build"));

  steps.set_micro_batches(8);
  for (double seconds : {0.25, 0.0, 0.24}) steps.add_step_times_seconds(seconds);
  EXPECT_THAT(FromReport(report).detail,
              HasSubstr("timed_steps[0].step_times_seconds[1] (0) is not a step time"));
}

TEST(CudaProbeOutcomeTest, AStoppedProbeIsNotAFailureOfItsConfiguration) {
  const ProbeRun run = RunFromProbeProcess(
      OneGpu(), Ended(Ending::kCancelled, 0, "waiting in ncclCommInitRank"), std::nullopt);
  EXPECT_EQ(run.outcome, v1::PROBE_INFRA_ERROR);
  EXPECT_THAT(DescribeStoppedProbe(Ended(Ending::kCancelled, 0, "waiting in ncclCommInitRank\n")),
              HasSubstr("paratune-probe was stopped after 3s; stderr ends: waiting in "
                        "ncclCommInitRank"));
}

TEST(CudaProbeOutcomeTest, SignalIsACrash) {
  const ProbeRun run = RunFromProbeProcess(
      OneGpu(), Ended(Ending::kSignaled, 11, "an illegal memory access"), std::nullopt);
  EXPECT_EQ(run.outcome, v1::PROBE_CRASH);
  EXPECT_THAT(run.detail, HasSubstr("killed by signal 11"));
  EXPECT_THAT(run.detail, HasSubstr("an illegal memory access"));
}

TEST(CudaProbeOutcomeTest, ErrorExitsAreCrashes) {
  EXPECT_THAT(
      RunFromProbeProcess(OneGpu(), Ended(Ending::kExited, 1, "cannot write"), std::nullopt).detail,
      HasSubstr("exited with code 1; stderr ends: cannot write"));
  const ProbeRun rejected = RunFromProbeProcess(
      OneGpu(), Ended(Ending::kExited, 2, "config.tensor_parallel (3)"), std::nullopt);
  EXPECT_EQ(rejected.outcome, v1::PROBE_CRASH);
  EXPECT_THAT(rejected.detail, HasSubstr("same build"));
}

TEST(CudaProbeOutcomeTest, MissingOrGarbledReportIsACrash) {
  const ProbeRun missing =
      RunFromProbeProcess(OneGpu(), Ended(Ending::kExited, 0, ""), std::nullopt);
  EXPECT_EQ(missing.outcome, v1::PROBE_CRASH);
  EXPECT_THAT(missing.detail, HasSubstr("no result file"));
  EXPECT_THAT(missing.detail, HasSubstr("stderr was empty"));
  const ProbeRun garbled =
      RunFromProbeProcess(OneGpu(), Ended(Ending::kExited, 0, ""), std::string("\xff\xff"));
  EXPECT_EQ(garbled.outcome, v1::PROBE_CRASH);
  EXPECT_THAT(garbled.detail, HasSubstr("not a ProbeReport"));
  // A parseable message without an outcome is not a report either.
  const ProbeRun empty =
      RunFromProbeProcess(OneGpu(), Ended(Ending::kExited, 0, ""), std::string());
  EXPECT_EQ(empty.outcome, v1::PROBE_CRASH);
}

}  // namespace
}  // namespace paratune
