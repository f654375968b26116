#include "worker/probe_result_builder.h"

#include "estimator/performance_model.h"
#include "estimator/performance_parameters.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "worker/probe/test_assignments.h"

namespace paratune {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// Llama-3.1-8B, global batch 16 x 4096 tokens on 8 H100-80GB as dp2 tp2 pp2: 8 micro-batches
// per step.
ProbeSpec EightGpus(std::vector<int64_t> counts = {}) {
  v1::ProbeAssignment assignment = TestAssignment("llama3.1-8b", 16, 4096, 2, 2, 2, 1, 1);
  for (int64_t count : counts) assignment.add_micro_batch_counts(count);
  return *ProbeSpec::FromAssignment(assignment);
}

// An OK run of full steps of `spec` measured on GPUs.
ProbeRun Measured(const ProbeSpec& spec, std::vector<double> steps) {
  ProbeRun run;
  run.outcome = v1::PROBE_OK;
  run.source = FigureSource::kMeasured;
  run.detail = "where it ran";
  run.timed_steps.push_back({spec.micro_batches(), std::move(steps)});
  run.phases = StepPhases(spec, Provenance::kMeasured);
  return run;
}

TEST(ProbeResultBuilderTest, ThroughputFollowsTheEstimatorsConvention) {
  const ProbeSpec spec = EightGpus();
  const v1::ProbeResult result =
      BuildProbeResult(spec, "command", Measured(spec, {2.0, 2.2, 1.8}), 7);
  EXPECT_EQ(result.outcome(), v1::PROBE_OK);
  EXPECT_EQ(result.backend(), "command");
  EXPECT_FALSE(result.simulated());
  EXPECT_THAT(result.step_times_seconds(), ElementsAre(2.0, 2.2, 1.8));
  EXPECT_DOUBLE_EQ(result.mean_step_time_seconds(), 2.0);
  EXPECT_DOUBLE_EQ(result.tokens_per_second(), 16.0 * 4096 / 2.0);
  // DESIGN.md §5.3 for Llama-3.1-8B: F = GBS s [12 L h^2 (1 + k/a + s/h) + 18 L f h + 6 V h],
  // over the 8 GPUs.
  const double h = 4096, f = 14336, layers = 32, vocab = 128256, s = 4096;
  const double flops =
      16 * s * (12 * layers * h * h * (1 + 8.0 / 32 + s / h) + 18 * layers * f * h + 6 * vocab * h);
  EXPECT_NEAR(result.model_tflops_per_gpu(), flops / 2.0 / 8 / 1e12, 1e-9);
  EXPECT_EQ(result.wall_seconds(), 7);
  EXPECT_THAT(result.measured(), ElementsAre("gemm", "attention", "elementwise", "tp_collectives",
                                             "pp_send_recv", "dp_collectives", "optimizer"));
  EXPECT_THAT(result.modelled(), IsEmpty());
  EXPECT_THAT(result.extrapolated(), IsEmpty());
  EXPECT_FALSE(result.has_measurements());
  EXPECT_THAT(
      result.message(),
      HasSubstr("measured: where it ran: mean step time 2 s over 3 timed steps (CV 10.00%), "));
}

TEST(ProbeResultBuilderTest, ExpertCollectivesAreTheirOwnPhase) {
  // Mixtral 8x7B on 8 GPUs as dp 8: ep 8 has an expert group to exchange tokens over, ep 1
  // none.
  v1::ProbeAssignment assignment = TestAssignment("mixtral-8x7b", 16, 4096, 8, 1, 1, 1, 1);
  assignment.mutable_config()->set_expert_parallel(8);
  const ProbeSpec experts = *ProbeSpec::FromAssignment(assignment);
  EXPECT_THAT(BuildProbeResult(experts, "cuda", Measured(experts, {2.0}), 0).measured(),
              ElementsAre("gemm", "attention", "elementwise", "ep_collectives", "dp_collectives",
                          "optimizer"));
  assignment.mutable_config()->set_expert_parallel(1);
  const ProbeSpec local = *ProbeSpec::FromAssignment(assignment);
  EXPECT_THAT(BuildProbeResult(local, "cuda", Measured(local, {2.0}), 0).measured(),
              ElementsAre("gemm", "attention", "elementwise", "dp_collectives", "optimizer"));
}

TEST(ProbeResultBuilderTest, ShortStepsAreKeptAndTheFullStepExtrapolated) {
  const ProbeSpec spec = EightGpus({2, 4});
  ProbeRun run = Measured(spec, {});
  // T(m) = 1 + 0.5 m: 2 s at 2 micro-batches, 3 s at 4; 5 s at the full step's 8.
  run.timed_steps = {{2, {2.0, 2.0, 2.0}}, {4, {3.0, 3.0, 3.0}}};
  const v1::ProbeResult result = BuildProbeResult(spec, "cuda", run, 0);
  ASSERT_EQ(result.outcome(), v1::PROBE_OK) << result.message();
  ASSERT_EQ(result.short_steps_size(), 2);
  EXPECT_EQ(result.short_steps(0).micro_batches(), 2);
  EXPECT_EQ(result.short_steps(1).step_times_seconds(2), 3.0);
  ASSERT_EQ(result.step_times_seconds_size(), 3);
  EXPECT_NEAR(result.mean_step_time_seconds(), 5.0, 1e-9);
  EXPECT_EQ(result.extrapolation().full_micro_batches(), 8);
  EXPECT_NEAR(result.extrapolation().slot_seconds(), 0.5, 1e-12);
  // pp 2: one slot of fill and drain, the rest of the intercept fixed.
  EXPECT_NEAR(result.extrapolation().fill_drain_seconds(), 0.5, 1e-12);
  EXPECT_NEAR(result.extrapolation().fixed_seconds(), 0.5, 1e-12);
  EXPECT_THAT(result.extrapolated(), ElementsAre("full_step"));
  EXPECT_THAT(result.message(),
              HasSubstr("mean step time 5 s, the full step of 8 micro-batches extrapolated from "
                        "3 timed steps at each of 2 and 4 micro-batches per step"));
}

TEST(ProbeResultBuilderTest, ShortStepsThatDoNotGrowAreAnInfrastructureError) {
  const ProbeSpec spec = EightGpus({2, 4});
  ProbeRun run = Measured(spec, {});
  run.timed_steps = {{2, {5.0, 5.0, 5.0}}, {4, {3.0, 3.0, 3.0}}};
  const v1::ProbeResult result = BuildProbeResult(spec, "cuda", run, 0);
  EXPECT_EQ(result.outcome(), v1::PROBE_INFRA_ERROR);
  EXPECT_THAT(result.message(), AllOf(HasSubstr("where it ran: "),
                                      HasSubstr("did not grow with their micro-batches")));
  EXPECT_EQ(result.short_steps_size(), 2);  // what was measured, for whoever looks
  EXPECT_TRUE(result.step_times_seconds().empty());
  EXPECT_THAT(result.measured(), IsEmpty());
}

// Llama-3.1-8B on 8 GPUs as dp4 tp2, probed as one replica of 2 GPUs.
ProbeSpec OneReplica() {
  return *ProbeSpec::FromAssignment(
      AsReplicaProbe(TestAssignment("llama3.1-8b", 32, 4096, 4, 2, 1, 1, 1)));
}

TEST(ProbeResultBuilderTest, AModelledDataParallelPhaseAddsTheModelsTime) {
  const ProbeSpec spec = OneReplica();
  const double dp_seconds =
      PredictPerformance(spec.model(), spec.training(), spec.cluster(), spec.config(),
                         DefaultPerformanceParameters(spec.cluster().gpu()))
          .dp_communication_seconds;
  ASSERT_GT(dp_seconds, 0);
  ProbeRun run = Measured(spec, {2.0, 2.0});
  run.phases[static_cast<int>(ProbePhase::kDpCollectives)] = Provenance::kModelled;
  run.measurements = v1::ProbeMeasurements();
  const v1::ProbeResult result = BuildProbeResult(spec, "cuda", run, 0);
  EXPECT_DOUBLE_EQ(result.step_times_seconds(0), 2.0 + dp_seconds);
  EXPECT_DOUBLE_EQ(result.mean_step_time_seconds(), 2.0 + dp_seconds);
  EXPECT_DOUBLE_EQ(result.measurements().modelled_dp_seconds_per_step(), dp_seconds);
  EXPECT_THAT(result.modelled(), ElementsAre("dp_collectives"));
  EXPECT_THAT(result.measured(), ::testing::Not(::testing::Contains("dp_collectives")));
  EXPECT_THAT(result.message(), HasSubstr("; one of 4 data-parallel replicas ran; the "));
  // Throughput counts the whole configuration: 8 GPUs' worth of FLOPs.
  EXPECT_DOUBLE_EQ(result.model_tflops_per_gpu(), ModelFlopsPerStep(spec.model(), spec.training()) /
                                                      ((2.0 + dp_seconds) * 8) / 1e12);
}

TEST(ProbeResultBuilderTest, AReplicaThatRanNoDataParallelTrafficSaysSo) {
  const ProbeSpec spec = OneReplica();
  ProbeRun run = Measured(spec, {2.0, 2.0});
  run.phases[static_cast<int>(ProbePhase::kDpCollectives)] = Provenance::kAbsent;
  const v1::ProbeResult result = BuildProbeResult(spec, "command", run, 0);
  EXPECT_DOUBLE_EQ(result.mean_step_time_seconds(), 2.0);
  EXPECT_THAT(result.measured(), ::testing::Not(::testing::Contains("dp_collectives")));
  EXPECT_THAT(result.modelled(), IsEmpty());
  EXPECT_THAT(result.message(),
              HasSubstr("; replica scope: 1 of the configuration's 4 data-parallel replicas ran, "
                        "so its data-parallel traffic was not measured"));
}

TEST(ProbeResultBuilderTest, ASimulatedRunIsLabelledSoAndItsModelIsNotAddedTwice) {
  const ProbeSpec spec = OneReplica();
  ProbeRun run = Measured(spec, {2.0, 2.0});
  run.source = FigureSource::kSimulated;
  run.detail = "the model";
  run.phases = StepPhases(spec, Provenance::kModelled);
  run.peak_memory_bytes = 30LL << 30;
  run.peak_memory = Provenance::kModelled;
  run.wall_time = Provenance::kModelled;
  run.wall_seconds = 34;
  run.wall_time_note = "30 s start-up and its steps";
  const v1::ProbeResult result = BuildProbeResult(spec, "sim", run, 0.2);
  EXPECT_TRUE(result.simulated());
  EXPECT_DOUBLE_EQ(result.mean_step_time_seconds(), 2.0);
  EXPECT_THAT(result.measured(), IsEmpty());
  EXPECT_THAT(result.modelled(),
              ElementsAre("gemm", "attention", "elementwise", "tp_collectives", "dp_collectives",
                          "optimizer", "peak_memory", "wall_time"));
  EXPECT_EQ(result.wall_seconds(), 34);
  EXPECT_EQ(result.message(),
            "simulated: the model: mean step time 2 s over 2 timed steps, 421.6 TFLOP/s per GPU; "
            "peak memory 30.00 GiB modelled; wall_seconds (34 s) is modelled, not measured: 30 s "
            "start-up and its steps");
}

TEST(ProbeResultBuilderTest, AReplayedRunSaysItsStepsAreOneValue) {
  const ProbeSpec spec = EightGpus();
  ProbeRun run = Measured(spec, {0.5, 0.5, 0.5});
  run.source = FigureSource::kReplayed;
  run.detail = "runs.csv:2 (a benchmark)";
  const v1::ProbeResult result = BuildProbeResult(spec, "replay", run, 0);
  EXPECT_FALSE(result.simulated());
  EXPECT_THAT(result.message(),
              AllOf(HasSubstr("replay of a measurement, not run here: runs.csv:2 (a benchmark): "
                              "mean step time 0.5 s over 3 timed steps, "),
                    HasSubstr("; each of the 3 step times is that one value")));
  EXPECT_THAT(result.message(), ::testing::Not(HasSubstr("CV")));
}

TEST(ProbeResultBuilderTest, TheProbesMeasurementsGetTheirStatistics) {
  const ProbeSpec spec = EightGpus();
  ProbeRun run = Measured(spec, {2.0, 2.2, 1.8});
  run.measurements = v1::ProbeMeasurements();
  run.measurements->set_gpu_name("NVIDIA H100 80GB HBM3");
  const v1::ProbeResult result = BuildProbeResult(spec, "cuda", run, 0);
  const v1::ProbeMeasurements& m = result.measurements();
  EXPECT_EQ(m.gpu_name(), "NVIDIA H100 80GB HBM3");
  EXPECT_DOUBLE_EQ(m.median_step_time_seconds(), 2.0);
  EXPECT_DOUBLE_EQ(m.min_step_time_seconds(), 1.8);
  EXPECT_DOUBLE_EQ(m.max_step_time_seconds(), 2.2);
  EXPECT_NEAR(m.step_time_cv(), 0.1, 1e-12);
  EXPECT_GT(m.predicted_step_time_seconds(), 0);
  EXPECT_EQ(m.modelled_dp_seconds_per_step(), 0);
  EXPECT_EQ(m.micro_batches_per_step(), 8);
}

TEST(ProbeResultBuilderTest, AFailedRunLabelsNoPhaseAndKeepsItsOtherFigures) {
  const ProbeSpec spec = EightGpus();
  ProbeRun run = Measured(spec, {});
  run.outcome = v1::PROBE_OUT_OF_MEMORY;
  run.timed_steps.clear();
  run.detail = "out of memory: \"CUDA out of memory\"";
  run.peak_memory_bytes = 80LL << 30;
  run.peak_memory = Provenance::kMeasured;
  run.peak_memory_note = "on this node";
  const v1::ProbeResult result = BuildProbeResult(spec, "command", run, 3);
  EXPECT_EQ(result.outcome(), v1::PROBE_OUT_OF_MEMORY);
  EXPECT_THAT(result.measured(), ElementsAre("peak_memory"));
  EXPECT_TRUE(result.step_times_seconds().empty());
  EXPECT_EQ(result.model_tflops_per_gpu(), 0);
  EXPECT_EQ(result.message(),
            "out of memory: \"CUDA out of memory\"; peak memory 80.00 GiB measured on this node");

  run.source = FigureSource::kSimulated;
  EXPECT_EQ(BuildProbeResult(spec, "sim", run, 3).message().rfind("simulated: out of memory", 0),
            0u);
  run.source = FigureSource::kReplayed;
  run.outcome = v1::PROBE_NOT_MEASURED;
  run.detail = "not measured: no run of it";
  run.peak_memory = Provenance::kAbsent;
  EXPECT_EQ(BuildProbeResult(spec, "replay", run, 3).message(), "not measured: no run of it");
}

}  // namespace
}  // namespace paratune
