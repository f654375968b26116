// The shared backend conformance suite and the probe's own checks, run with the real
// paratune-probe on GPU 0 of this machine (an H100 or larger: the out-of-memory case assumes
// 80 GB). Tagged "gpu": it runs only on a GPU machine (docs/probe.md).
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "estimator/memory_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "worker/backend_conformance.h"
#include "worker/cuda_backend.h"
#include "worker/probe/footprint_plan.h"
#include "worker/probe/probe_spec.h"
#include "worker/probe/test_assignments.h"
#include "worker/probe_pipeline.h"

namespace paratune {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

std::string ProbeBinary() {
  return absl::StrCat(std::getenv("TEST_SRCDIR"), "/paratune/worker/cuda/paratune-probe");
}

std::unique_ptr<ProbeBackend> RealProbe() {
  CudaBackend::Options options;
  options.probe_binary = ProbeBinary();
  options.scratch_directory = std::getenv("TEST_TMPDIR");
  return std::make_unique<CudaBackend>(options);
}

// The suite's small probe as one data-parallel replica on one GPU: Llama-3.2-1B, sequence
// 2048, 8 micro-batches per step.
v1::ProbeAssignment OneGpuReplica() { return AsReplicaProbe(SmallConformanceAssignment()); }

// The result the worker makes of the real probe's run of `assignment`.
v1::ProbeResult Probe(const v1::ProbeAssignment& assignment) {
  SoloProbeContext context;
  return RunProbe(*RealProbe(), assignment, context, *RealClock());
}

INSTANTIATE_TEST_SUITE_P(Cuda, BackendConformanceTest,
                         ::testing::Values(BackendConformanceParam{"cuda", RealProbe,
                                                                   OneGpuReplica()}),
                         BackendConformanceParamName);

v1::ProbeResult RunOk(const v1::ProbeAssignment& assignment) {
  const v1::ProbeResult result = Probe(assignment);
  EXPECT_EQ(result.outcome(), v1::PROBE_OK) << result.message();
  return result;
}

// What one GPU measured: every compute phase took time, the memory model's terms were all
// allocated, the measured peak holds them, and the modelled data-parallel time is labelled.
TEST(CudaProbeTest, MeasurementsAreCompleteAndLabelled) {
  const v1::ProbeResult result = RunOk(OneGpuReplica());
  const v1::ProbeMeasurements& m = result.measurements();
  EXPECT_THAT(m.gpu_name(), HasSubstr("NVIDIA"));
  EXPECT_FALSE(m.cuda_runtime_version().empty());
  EXPECT_FALSE(m.nccl_version().empty());
  double phases = 0;
  for (const v1::PhaseTime& phase : m.phases()) {
    if (phase.phase() == "gemm" || phase.phase() == "attention" || phase.phase() == "elementwise" ||
        phase.phase() == "optimizer") {
      EXPECT_GT(phase.seconds(), 0) << phase.phase();
    }
    phases += phase.seconds();
  }
  // The instrumented step is one more step: its phases add up to about a measured step
  // (less the modelled data-parallel time, which no phase holds).
  const double measured_step = m.median_step_time_seconds() - m.modelled_dp_seconds_per_step();
  EXPECT_GT(phases, 0.5 * measured_step);
  EXPECT_LT(phases, 2.0 * measured_step);
  int64_t allocated = 0;
  for (const v1::MemoryTermBytes& term : m.memory_terms()) {
    if (term.term() != "cuda_context" && term.term() != "nccl_buffers") {
      EXPECT_GE(term.allocated_bytes(), term.estimated_bytes()) << term.term();
    }
    allocated += term.allocated_bytes();
  }
  EXPECT_GE(result.peak_memory_bytes(), allocated);
  EXPECT_GT(m.modelled_dp_seconds_per_step(), 0);
  EXPECT_THAT(result.modelled(), Contains("dp_collectives"));
  EXPECT_GT(m.predicted_step_time_seconds(), 0);
  // A single rank has no communicator to benchmark.
  EXPECT_EQ(m.collectives_size(), 0);
}

// The short-probe protocol on a GPU (docs/short_probes.md): the full step extrapolated from
// short steps of 2 and 4 micro-batches is within 5% of the full steps measured, for a replica
// of one GPU (a global batch of 128: 16 micro-batches per step).
TEST(CudaProbeTest, ShortStepsExtrapolateTheMeasuredFullStep) {
  v1::ProbeAssignment full = OneGpuReplica();
  full.mutable_training()->set_global_batch_size(128);
  full.set_timed_steps(5);
  full.set_deadline_seconds(600);
  v1::ProbeAssignment short_steps = full;
  short_steps.add_micro_batch_counts(2);
  short_steps.add_micro_batch_counts(4);
  const v1::ProbeResult measured = RunOk(full);
  const v1::ProbeResult extrapolated = RunOk(short_steps);
  ASSERT_EQ(extrapolated.short_steps_size(), 2);
  EXPECT_THAT(extrapolated.extrapolated(), Contains("full_step"));
  std::printf(
      "short probes: full step %.4f s measured, %.4f s extrapolated (slot %.4f s, "
      "fill/drain %.4f s, fixed %.4f s)\n",
      measured.mean_step_time_seconds(), extrapolated.mean_step_time_seconds(),
      extrapolated.extrapolation().slot_seconds(),
      extrapolated.extrapolation().fill_drain_seconds(),
      extrapolated.extrapolation().fixed_seconds());
  EXPECT_NEAR(extrapolated.mean_step_time_seconds() / measured.mean_step_time_seconds(), 1, 0.05);
}

TEST(CudaProbeTest, FullRecomputationRuns) {
  v1::ProbeAssignment assignment = OneGpuReplica();
  assignment.mutable_config()->set_recompute(v1::RECOMPUTE_FULL);
  EXPECT_EQ(RunOk(assignment).step_times_seconds_size(), assignment.timed_steps());
}

// An fp8 training step on Hopper (Fp8Linears in every layer, worker/cuda/fp8_linear.h), with
// and without full recomputation, with bf16 and with fp8 parameters (fp8_parameters.h): it
// runs, and Transformer Engine's fp8 state is allocated at least as estimated.
TEST(CudaProbeTest, Fp8TrainingRuns) {
  for (const auto& [recompute, fp8_parameters] :
       {std::make_pair(v1::RECOMPUTE_NONE, false), std::make_pair(v1::RECOMPUTE_FULL, false),
        std::make_pair(v1::RECOMPUTE_NONE, true), std::make_pair(v1::RECOMPUTE_FULL, true)}) {
    SCOPED_TRACE(absl::StrCat("recompute ", recompute, ", fp8 parameters ", fp8_parameters));
    v1::ProbeAssignment assignment = OneGpuReplica();
    assignment.mutable_training()->set_precision(v1::FP8);
    assignment.mutable_training()->set_distributed_optimizer(true);
    assignment.mutable_training()->set_fp8_param_gather(fp8_parameters);
    assignment.mutable_config()->set_recompute(recompute);
    const v1::ProbeResult result = RunOk(assignment);
    EXPECT_EQ(result.step_times_seconds_size(), assignment.timed_steps());
    int found = 0;
    for (const v1::MemoryTermBytes& term : result.measurements().memory_terms()) {
      if (term.term() == "fp8_weight_copies" || term.term() == "fp8_scaling_state") {
        EXPECT_GT(term.estimated_bytes(), 0) << term.term();
        EXPECT_GE(term.allocated_bytes(), term.estimated_bytes()) << term.term();
        ++found;
      }
    }
    EXPECT_EQ(found, 2);
  }
}

// The peak memory the probe's footprint plan estimates for the assignment's first stage.
double EstimatedPeakBytes(const v1::ProbeAssignment& assignment) {
  const absl::StatusOr<ProbeSpec> spec = ProbeSpec::FromAssignment(assignment);
  EXPECT_TRUE(spec.ok()) << spec.status();
  if (!spec.ok()) return 0;
  return FootprintPlan::Create(spec->model(), spec->training(), spec->cluster(), spec->config(),
                               MemoryOptions(), /*stage=*/0)
      .estimated_bytes();
}

// Llama-3.1-8B as one of 32 data-parallel replicas at the shortest sequence (8192, doubled)
// whose estimated peak is more than 1.5 times the memory of the GPU this runs on: the probe's
// allocation must fail on whatever GPU is lent (a size that fails on an H100-80GB, s 8192 at
// 95.9 GiB, ran on an H200: docs/probe.md).
TEST(CudaProbeTest, ConfigurationTheEstimatorCallsOutOfMemoryFailsAllocation) {
  const absl::StatusOr<std::vector<v1::Gpu>> gpus = ListProbeGpus(ProbeBinary(), absl::Seconds(60));
  ASSERT_TRUE(gpus.ok()) << gpus.status();
  ASSERT_FALSE(gpus->empty());
  const double capacity = static_cast<double>(gpus->front().memory_bytes());
  v1::ProbeAssignment assignment = OneGpuReplica();
  assignment.mutable_model()->set_preset("llama3.1-8b");
  assignment.mutable_training()->set_global_batch_size(128);
  assignment.mutable_cluster()->set_num_nodes(4);
  assignment.mutable_config()->set_data_parallel(32);
  for (int64_t sequence = 8192;; sequence *= 2) {
    ASSERT_LE(sequence, 1 << 20) << "no sequence of Llama-3.1-8B exceeds " << capacity << " B";
    assignment.mutable_training()->set_seq_len(sequence);
    if (EstimatedPeakBytes(assignment) > 1.5 * capacity) break;
  }
  SCOPED_TRACE(absl::StrCat("sequence ", assignment.training().seq_len(), ", estimated ",
                            EstimatedPeakBytes(assignment), " B of the GPU's ", capacity, " B"));
  const v1::ProbeResult result = Probe(assignment);
  EXPECT_EQ(result.outcome(), v1::PROBE_OUT_OF_MEMORY) << result.message();
  EXPECT_THAT(result.message(), HasSubstr("cudaMalloc of"));
}

}  // namespace
}  // namespace paratune
