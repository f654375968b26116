#include "worker/probe/probe_report.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "worker/probe/test_assignments.h"

namespace paratune {
namespace {

using ::testing::ElementsAre;

ProbeMeasurement Measured() {
  ProbeMeasurement m;
  m.step_seconds = {2.0, 2.2, 1.8};
  for (int p = 0; p < static_cast<int>(ProbePhase::kCount); ++p) m.phase_seconds[p] = 0.1 * p;
  CollectiveMeasurement tp;
  tp.group = RankGroup::kTensor;
  tp.operation = CollectiveOperation::kAllGather;
  tp.ranks = 2;
  tp.bytes = 1'000'000'000;
  tp.seconds = 0.004;
  m.collectives.push_back(tp);
  m.peak_memory_bytes = 40LL << 30;
  m.peak_memory_stage = 1;
  m.device.gpu_name = "NVIDIA H100 80GB HBM3";
  m.device.nccl_version = "2.28.9";
  m.attention_kernel = "chunked";
  m.attention_fallback_reason = "cuDNN has no engine for the attention graph";
  m.attention_backward_kernel = "cudnn_fused";
  return m;
}

// Llama-3.1-8B on 8 GPUs as dp2 tp2 pp2: 8 micro-batches per step.
ProbeSpec EightGpus() {
  return *ProbeSpec::FromAssignment(TestAssignment("llama3.1-8b", 16, 4096, 2, 2, 2, 1, 1));
}

TEST(ProbeReportTest, AnOkReportHoldsWhatTheProbeMeasured) {
  const v1::ProbeReport report = ReportFromMeasurement(EightGpus(), Measured());
  EXPECT_EQ(report.outcome(), v1::PROBE_OK);
  ASSERT_EQ(report.timed_steps_size(), 1);
  EXPECT_EQ(report.timed_steps(0).micro_batches(), 8);
  EXPECT_THAT(report.timed_steps(0).step_times_seconds(), ElementsAre(2.0, 2.2, 1.8));
  EXPECT_EQ(report.peak_memory_bytes(), 40LL << 30);
  EXPECT_EQ(report.peak_memory_stage(), 1);

  const v1::ProbeMeasurements& m = report.measurements();
  ASSERT_EQ(m.phases_size(), static_cast<int>(ProbePhase::kCount));
  EXPECT_EQ(m.phases(0).phase(), "gemm");
  EXPECT_DOUBLE_EQ(m.phases(3).seconds(), 0.3);
  ASSERT_EQ(m.collectives_size(), 1);
  EXPECT_EQ(m.collectives(0).group(), "tp");
  EXPECT_EQ(m.collectives(0).operation(), "all_gather");
  EXPECT_DOUBLE_EQ(m.collectives(0).algorithm_bandwidth_gbps(), 250.0);
  EXPECT_DOUBLE_EQ(m.collectives(0).bus_bandwidth_gbps(), 125.0);
  EXPECT_GT(m.estimated_peak_memory_bytes(), 0);
  EXPECT_GE(m.memory_terms_size(), 12);
  EXPECT_EQ(m.memory_terms(0).term(), "weights");
  EXPECT_EQ(m.nccl_version(), "2.28.9");
  EXPECT_EQ(m.attention_kernel(), "chunked");
  EXPECT_EQ(m.attention_fallback_reason(), "cuDNN has no engine for the attention graph");
  EXPECT_EQ(m.attention_backward_kernel(), "cudnn_fused");
  EXPECT_EQ(m.attention_backward_fallback_reason(), "");
  // What the steps and the models give is the worker's to add.
  EXPECT_EQ(m.median_step_time_seconds(), 0);
  EXPECT_EQ(m.predicted_step_time_seconds(), 0);
  EXPECT_EQ(m.micro_batches_per_step(), 0);
}

TEST(ProbeReportTest, ShortStepsAreOneSeriesPerCount) {
  v1::ProbeAssignment assignment = TestAssignment("llama3.1-8b", 64, 4096, 2, 2, 2, 1, 1);
  assignment.add_micro_batch_counts(4);
  assignment.add_micro_batch_counts(8);
  ProbeMeasurement m = Measured();
  m.step_seconds = {3.0, 3.1, 3.2, 5.0, 5.1, 5.2};
  const v1::ProbeReport report = ReportFromMeasurement(*ProbeSpec::FromAssignment(assignment), m);
  ASSERT_EQ(report.timed_steps_size(), 2);
  EXPECT_EQ(report.timed_steps(0).micro_batches(), 4);
  EXPECT_THAT(report.timed_steps(0).step_times_seconds(), ElementsAre(3.0, 3.1, 3.2));
  EXPECT_EQ(report.timed_steps(1).micro_batches(), 8);
  EXPECT_THAT(report.timed_steps(1).step_times_seconds(), ElementsAre(5.0, 5.1, 5.2));
}

TEST(ProbeReportTest, TheRunMarksEveryPhaseTheProbeRan) {
  const ProbeSpec spec = EightGpus();
  const ProbeRun run = RunFromReport(spec, ReportFromMeasurement(spec, Measured()));
  EXPECT_EQ(run.outcome, v1::PROBE_OK);
  EXPECT_EQ(run.source, FigureSource::kMeasured);
  const auto mark = [&run](ProbePhase phase) { return run.phases[static_cast<int>(phase)]; };
  EXPECT_EQ(mark(ProbePhase::kGemm), Provenance::kMeasured);
  EXPECT_EQ(mark(ProbePhase::kTpCollectives), Provenance::kMeasured);
  EXPECT_EQ(mark(ProbePhase::kPpSendRecv), Provenance::kMeasured);
  EXPECT_EQ(mark(ProbePhase::kDpCollectives), Provenance::kMeasured);
  EXPECT_EQ(mark(ProbePhase::kCpCollectives), Provenance::kAbsent);
  EXPECT_EQ(run.peak_memory, Provenance::kMeasured);
  EXPECT_EQ(run.peak_memory_note.rfind("on pipeline stage 1, ", 0), 0u) << run.peak_memory_note;
  EXPECT_EQ(run.detail, "paratune-probe on 8 x NVIDIA H100 80GB HBM3");
  ASSERT_TRUE(run.measurements.has_value());
  EXPECT_EQ(run.measurements->collectives_size(), 1);
}

TEST(ProbeReportTest, AReplicaProbesDataParallelTrafficIsModelled) {
  const ProbeSpec spec = *ProbeSpec::FromAssignment(
      AsReplicaProbe(TestAssignment("llama3.1-8b", 32, 4096, 4, 2, 1, 1, 1)));
  ASSERT_TRUE(DataParallelModelled(spec));
  const ProbeRun run = RunFromReport(spec, ReportFromMeasurement(spec, Measured()));
  EXPECT_EQ(run.phases[static_cast<int>(ProbePhase::kDpCollectives)], Provenance::kModelled);
}

TEST(ProbeReportTest, BusBandwidthFactorsFollowNcclTests) {
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(CollectiveOperation::kAllGather, 4), 0.75);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(CollectiveOperation::kReduceScatter, 8), 0.875);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(CollectiveOperation::kAllReduce, 2), 1.0);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(CollectiveOperation::kSendRecv, 2), 1.0);
}

TEST(ProbeReportTest, ErrorsMapToOutcomes) {
  EXPECT_EQ(OutcomeForError(absl::ResourceExhaustedError("cudaMalloc")), v1::PROBE_OUT_OF_MEMORY);
  EXPECT_EQ(OutcomeForError(absl::UnavailableError("no CUDA device")), v1::PROBE_INFRA_ERROR);
  EXPECT_EQ(OutcomeForError(absl::FailedPreconditionError("GPU 3 absent")), v1::PROBE_INFRA_ERROR);
  EXPECT_EQ(OutcomeForError(absl::InternalError("illegal address")), v1::PROBE_CRASH);
  const v1::ProbeReport report =
      ReportFromError(absl::ResourceExhaustedError("weights: cudaMalloc of 9 GiB failed"));
  EXPECT_EQ(report.outcome(), v1::PROBE_OUT_OF_MEMORY);
  EXPECT_EQ(report.error(), "weights: cudaMalloc of 9 GiB failed");
  const ProbeRun run = RunFromReport(EightGpus(), report);
  EXPECT_EQ(run.outcome, v1::PROBE_OUT_OF_MEMORY);
  EXPECT_EQ(run.detail, "weights: cudaMalloc of 9 GiB failed");
  EXPECT_TRUE(run.timed_steps.empty());
}

}  // namespace
}  // namespace paratune
