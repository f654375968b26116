#include "server/core/worker_request.h"

#include <cstdint>
#include <functional>
#include <limits>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/core/test_probe_result.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;

v1::RegisterWorkerRequest Valid() {
  v1::RegisterWorkerRequest request;
  request.set_hostname("gpu-node-1");
  v1::Gpu& gpu = *request.add_gpus();
  gpu.set_name("simulated H100-80GB");
  gpu.set_memory_bytes(85'520'809'984);
  request.add_backends("sim");
  (*request.mutable_labels())["rack"] = "a1";
  return request;
}

TEST(ValidateRegisterWorkerRequestTest, AcceptsAValidWorker) {
  EXPECT_TRUE(ValidateRegisterWorkerRequest(Valid()).ok());
}

TEST(ValidateRegisterWorkerRequestTest, RefusesGpusOfTwoTypes) {
  v1::RegisterWorkerRequest request = Valid();
  v1::Gpu& other = *request.add_gpus();
  other.set_index(1);
  other.set_name("simulated A100-40GB");
  other.set_memory_bytes(42'949'672'960);
  const absl::Status status = ValidateRegisterWorkerRequest(request);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("gpus[1] (\"simulated A100-40GB\""));
  EXPECT_THAT(status.message(), HasSubstr("must be of one type"));
}

TEST(ValidateRegisterWorkerRequestTest, NamesTheBadField) {
  v1::RegisterWorkerRequest request = Valid();
  request.clear_hostname();
  EXPECT_THAT(ValidateRegisterWorkerRequest(request).message(), HasSubstr("hostname"));

  request = Valid();
  request.clear_gpus();
  EXPECT_EQ(ValidateRegisterWorkerRequest(request),
            absl::InvalidArgumentError("gpus (0 GPUs) must list 1 to 64 GPUs"));

  request = Valid();
  request.mutable_gpus(0)->set_memory_bytes(0);
  EXPECT_EQ(ValidateRegisterWorkerRequest(request),
            absl::InvalidArgumentError("gpus[0].memory_bytes (0) must be in [1, 17592186044416]"));

  request = Valid();
  request.add_backends("tpu");
  EXPECT_THAT(ValidateRegisterWorkerRequest(request).message(), HasSubstr("backends[1]"));

  request = Valid();
  request.add_backends("sim");
  EXPECT_THAT(ValidateRegisterWorkerRequest(request).message(), HasSubstr("listed twice"));

  request = Valid();
  for (int i = 0; i < 33; ++i) (*request.mutable_labels())["k" + std::to_string(i)] = "v";
  EXPECT_THAT(ValidateRegisterWorkerRequest(request).message(), HasSubstr("labels (34 labels)"));
}

TEST(ValidateRegisterWorkerRequestTest, GpuIndicesAreDistinctDeviceOrdinals) {
  v1::RegisterWorkerRequest request = Valid();
  request.mutable_gpus(0)->set_index(std::numeric_limits<int64_t>::max());
  EXPECT_EQ(ValidateRegisterWorkerRequest(request),
            absl::InvalidArgumentError("gpus[0].index (9223372036854775807) must be in [0, 63]"));
  request.mutable_gpus(0)->set_index(-1);
  EXPECT_EQ(ValidateRegisterWorkerRequest(request),
            absl::InvalidArgumentError("gpus[0].index (-1) must be in [0, 63]"));
  request.mutable_gpus(0)->set_index(63);
  EXPECT_TRUE(ValidateRegisterWorkerRequest(request).ok());
  *request.add_gpus() = request.gpus(0);
  EXPECT_EQ(ValidateRegisterWorkerRequest(request),
            absl::InvalidArgumentError("gpus[1].index (63) is listed twice"));

  request = Valid();
  request.mutable_gpus(0)->set_memory_bytes(std::numeric_limits<int64_t>::max());
  EXPECT_EQ(ValidateRegisterWorkerRequest(request),
            absl::InvalidArgumentError(
                "gpus[0].memory_bytes (9223372036854775807) must be in [1, 17592186044416]"));
}

TEST(ValidateRegisterWorkerRequestTest, LabelKeysAndValuesAreBounded) {
  v1::RegisterWorkerRequest request = Valid();
  (*request.mutable_labels())[""] = "v";
  EXPECT_EQ(ValidateRegisterWorkerRequest(request),
            absl::InvalidArgumentError("labels key (\"\", 0 bytes) must be 1 to 256 bytes"));

  request = Valid();
  (*request.mutable_labels())[std::string(257, 'k')] = "v";
  EXPECT_THAT(ValidateRegisterWorkerRequest(request).message(), HasSubstr("labels key (\"kkkk"));

  request = Valid();
  (*request.mutable_labels())["rack"] = std::string(257, 'v');
  EXPECT_THAT(ValidateRegisterWorkerRequest(request).message(),
              HasSubstr("labels[\"rack\"] (\"vvvv"));
  (*request.mutable_labels())["rack"] = "";
  EXPECT_TRUE(ValidateRegisterWorkerRequest(request).ok());
}

TEST(ValidateHeartbeatRequestTest, RunningProbesAreAtMostOnePerGpuAndProbeNames) {
  v1::HeartbeatRequest request;
  request.set_worker("workers/1");
  EXPECT_TRUE(ValidateHeartbeatRequest(request).ok());
  for (int i = 0; i < 64; ++i) request.add_running_probes("searches/1/candidates/0/probes/1");
  EXPECT_TRUE(ValidateHeartbeatRequest(request).ok());
  request.add_running_probes("searches/1/candidates/0/probes/1");
  EXPECT_EQ(ValidateHeartbeatRequest(request),
            absl::InvalidArgumentError("running_probes (65 probes) must list at most 64"));

  request.clear_running_probes();
  request.add_running_probes("searches/1/candidates/0/probes/1");
  request.add_running_probes("");
  EXPECT_EQ(ValidateHeartbeatRequest(request),
            absl::InvalidArgumentError("running_probes[1] (\"\") must have the form "
                                       "searches/{id}/candidates/{n}/probes/{attempt}"));
  // A name too long for the form is refused with its first 128 bytes shown.
  request.set_running_probes(1, "searches/1/candidates/0/probes/" + std::string(100'000, '1'));
  const absl::Status over_long = ValidateHeartbeatRequest(request);
  EXPECT_EQ(over_long.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(over_long.message(), HasSubstr("running_probes[1] (\"searches/1/candidates/0/"));
  EXPECT_LT(over_long.message().size(), 300u);
}

TEST(ValidateAcquireProbeRequestTest, WaitSecondsAndLastProbeAreChecked) {
  v1::AcquireProbeRequest request;
  request.set_worker("workers/1");
  EXPECT_TRUE(ValidateAcquireProbeRequest(request).ok());
  request.set_wait_seconds(60);
  request.set_last_probe("searches/3/candidates/7/probes/2");
  EXPECT_TRUE(ValidateAcquireProbeRequest(request).ok());

  request.set_wait_seconds(std::numeric_limits<double>::quiet_NaN());
  EXPECT_EQ(ValidateAcquireProbeRequest(request),
            absl::InvalidArgumentError("wait_seconds (nan) must be in [0, 60]"));
  request.set_wait_seconds(-1);
  EXPECT_EQ(ValidateAcquireProbeRequest(request),
            absl::InvalidArgumentError("wait_seconds (-1) must be in [0, 60]"));
  request.set_wait_seconds(1);
  request.set_last_probe("searches/3/candidates/7");
  EXPECT_EQ(ValidateAcquireProbeRequest(request),
            absl::InvalidArgumentError("last_probe (\"searches/3/candidates/7\") must have the "
                                       "form searches/{id}/candidates/{n}/probes/{attempt}"));
}

TEST(ValidateRendezvousRequestTest, TokenIsAtMost4096Bytes) {
  v1::RendezvousRequest request;
  EXPECT_TRUE(ValidateRendezvousRequest(request).ok());
  request.set_token(std::string(4096, 'x'));
  EXPECT_TRUE(ValidateRendezvousRequest(request).ok());
  request.set_token(std::string(4097, 'x'));
  EXPECT_EQ(ValidateRendezvousRequest(request),
            absl::InvalidArgumentError("token (4097 bytes) must be at most 4096 bytes"));
}

TEST(ValidateDeregisterWorkerRequestTest, ReasonIsAtMost1024Bytes) {
  v1::DeregisterWorkerRequest request;
  request.set_reason(std::string(1024, 'r'));
  EXPECT_TRUE(ValidateDeregisterWorkerRequest(request).ok());
  request.set_reason(std::string(1025, 'r'));
  EXPECT_EQ(ValidateDeregisterWorkerRequest(request),
            absl::InvalidArgumentError("reason (1025 bytes) must be at most 1024 bytes"));
}

v1::ProbeResult Ok() {
  v1::ProbeResult result;
  result.set_outcome(v1::PROBE_OK);
  result.add_step_times_seconds(1.5);
  result.set_mean_step_time_seconds(1.5);
  result.set_tokens_per_second(2.8e5);
  result.set_model_tflops_per_gpu(400);
  return result;
}

TEST(ValidateProbeResultTest, AcceptsACompleteResult) {
  EXPECT_TRUE(ValidateProbeResult(CompleteProbeResult()).ok());
}

TEST(ValidateProbeResultTest, RefusesEveryFigureOutOfRangeWhateverTheOutcome) {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  constexpr double kInf = std::numeric_limits<double>::infinity();
  constexpr int64_t kHuge = std::numeric_limits<int64_t>::max();
  const struct {
    std::function<void(v1::ProbeResult&)> spoil;
    std::string message;
  } cases[] = {
      {[](v1::ProbeResult& r) { r.set_step_times_seconds(1, 0); },
       "result.step_times_seconds[1] (0) must be in (0, 1e+06]"},
      {[&](v1::ProbeResult& r) { r.set_mean_step_time_seconds(kNaN); },
       "result.mean_step_time_seconds (nan) must be in [0, 1e+06]"},
      {[&](v1::ProbeResult& r) { r.set_tokens_per_second(kInf); },
       "result.tokens_per_second (inf) must be in [0, 1e+12]"},
      {[](v1::ProbeResult& r) { r.set_model_tflops_per_gpu(1e300); },
       "result.model_tflops_per_gpu (1e+300) must be in [0, 100000]"},
      {[](v1::ProbeResult& r) { r.set_peak_memory_bytes(-1); },
       "result.peak_memory_bytes (-1) must be in [0, 17592186044416]"},
      {[](v1::ProbeResult& r) { r.set_wall_seconds(-1); },
       "result.wall_seconds (-1) must be in [0, 1e+06]"},
      {[](v1::ProbeResult& r) { r.set_startup_seconds(2e6); },
       "result.startup_seconds (2e+06) must be in [0, 1e+06]"},
      {[](v1::ProbeResult& r) { r.set_backend(std::string(300, 'b')); }, "result.backend (\"bbbb"},
      {[](v1::ProbeResult& r) { r.set_measured(0, ""); },
       "result.measured[0] (\"\", 0 bytes) must be 1 to 256 bytes"},
      {[](v1::ProbeResult& r) {
         for (int i = 0; i < 65; ++i) r.add_modelled("part");
       },
       "result.modelled (66 entries) must have at most 64"},
      {[&](v1::ProbeResult& r) { r.mutable_measurements()->set_step_time_cv(kNaN); },
       "result.measurements.step_time_cv (nan) must be in [0, 100]"},
      {[](v1::ProbeResult& r) { r.mutable_measurements()->mutable_phases(0)->set_seconds(-1); },
       "result.measurements.phases[0].seconds (-1) must be in [0, 1e+06]"},
      {[](v1::ProbeResult& r) { r.mutable_measurements()->mutable_phases(0)->clear_phase(); },
       "result.measurements.phases[0].phase (\"\", 0 bytes)"},
      {[&](v1::ProbeResult& r) { r.mutable_measurements()->mutable_collectives(0)->set_ranks(0); },
       "result.measurements.collectives[0].ranks (0) must be in [1, 4194304]"},
      {[&](v1::ProbeResult& r) {
         r.mutable_measurements()->mutable_collectives(0)->set_bytes(kHuge);
       },
       "result.measurements.collectives[0].bytes (9223372036854775807) must be in [0, "
       "17592186044416]"},
      {[&](v1::ProbeResult& r) {
         r.mutable_measurements()->mutable_collectives(0)->set_bus_bandwidth_gbps(kInf);
       },
       "result.measurements.collectives[0].bus_bandwidth_gbps (inf) must be in [0, 100000]"},
      {[](v1::ProbeResult& r) {
         r.mutable_measurements()->mutable_memory_terms(0)->set_allocated_bytes(-1);
       },
       "result.measurements.memory_terms[0].allocated_bytes (-1) must be in [0, "
       "17592186044416]"},
      {[](v1::ProbeResult& r) {
         r.mutable_measurements()->set_cuda_runtime_version(std::string(257, 'v'));
       },
       "result.measurements.cuda_runtime_version (\"vvvv"},
      {[&](v1::ProbeResult& r) { r.mutable_measurements()->set_micro_batches_per_step(kHuge); },
       "result.measurements.micro_batches_per_step (9223372036854775807) must be in [0, "
       "16777216]"},
      {[](v1::ProbeResult& r) { r.mutable_short_steps(1)->set_micro_batches(0); },
       "result.short_steps[1].micro_batches (0) must be in [1, 16777216]"},
      {[&](v1::ProbeResult& r) { r.mutable_short_steps(0)->set_step_times_seconds(0, kInf); },
       "result.short_steps[0].step_times_seconds[0] (inf) must be in (0, 1e+06]"},
      {[](v1::ProbeResult& r) { r.mutable_extrapolation()->set_full_micro_batches(0); },
       "result.extrapolation.full_micro_batches (0) must be in [1, 16777216]"},
      {[](v1::ProbeResult& r) { r.mutable_extrapolation()->set_slot_seconds(0); },
       "result.extrapolation.slot_seconds (0) must be in (0, 1e+06]"},
      {[&](v1::ProbeResult& r) { r.mutable_extrapolation()->set_fixed_seconds(-kInf); },
       "result.extrapolation.fixed_seconds (-inf) must be in [-1e+06, 1e+06]"},
      {[](v1::ProbeResult& r) { r.mutable_measurements()->set_attention_kernel("flash"); },
       "result.measurements.attention_kernel (\"flash\") must be empty, \"cudnn_fused\" or "
       "\"chunked\""},
      {[](v1::ProbeResult& r) {
         r.mutable_measurements()->set_attention_fallback_reason(std::string(70000, 'r'));
       },
       "result.measurements.attention_fallback_reason (70000 bytes) must be at most 65536 bytes"},
      {[](v1::ProbeResult& r) { r.mutable_measurements()->set_attention_backward_kernel("cudnn"); },
       "result.measurements.attention_backward_kernel (\"cudnn\") must be empty, \"cudnn_fused\" "
       "or \"chunked\""},
      {[](v1::ProbeResult& r) {
         r.mutable_measurements()->set_attention_backward_fallback_reason(std::string(70000, 'r'));
       },
       "result.measurements.attention_backward_fallback_reason (70000 bytes) must be at most "
       "65536 bytes"},
  };
  for (const auto& c : cases) {
    for (v1::ProbeOutcome outcome : {v1::PROBE_OK, v1::PROBE_CRASH}) {
      v1::ProbeResult result = CompleteProbeResult();
      result.set_outcome(outcome);
      c.spoil(result);
      const absl::Status status = ValidateProbeResult(result);
      EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << c.message;
      EXPECT_THAT(status.message(), HasSubstr(c.message)) << v1::ProbeOutcome_Name(outcome);
    }
  }
}

TEST(ValidateProbeResultTest, AnOkResultAgreesWithItself) {
  const struct {
    std::function<void(v1::ProbeResult&)> spoil;
    std::string message;
  } cases[] = {
      {[](v1::ProbeResult& r) { r.set_mean_step_time_seconds(0); },
       "result.mean_step_time_seconds (0) must be > 0 for an OK probe with step times"},
      {[](v1::ProbeResult& r) { r.set_model_tflops_per_gpu(0); },
       "result.model_tflops_per_gpu (0)"},
      {[](v1::ProbeResult& r) { r.mutable_short_steps(1)->add_step_times_seconds(0.7); },
       "result.short_steps[1].step_times_seconds (3 values) must have as many values as "
       "result.step_times_seconds (2)"},
      {[](v1::ProbeResult& r) { r.add_step_times_seconds(1.0); },
       "result.short_steps[0].step_times_seconds (2 values) must have as many values as "
       "result.step_times_seconds (3)"},
      {[](v1::ProbeResult& r) { r.mutable_short_steps(1)->set_micro_batches(8); },
       "result.short_steps[1].micro_batches (8) must be in [9, 31]"},
      {[](v1::ProbeResult& r) { r.mutable_short_steps(1)->set_micro_batches(32); },
       "result.short_steps[1].micro_batches (32) must be in [9, 31]"},
      {[](v1::ProbeResult& r) { r.mutable_short_steps()->RemoveLast(); },
       "result.short_steps (1 series) must have at least two"},
      {[](v1::ProbeResult& r) { r.clear_extrapolation(); },
       "result.extrapolation (unset) must say how"},
      {[](v1::ProbeResult& r) { r.clear_short_steps(); },
       "result.extrapolation is set, but result.short_steps (none)"},
      {[](v1::ProbeResult& r) { r.set_mean_step_time_seconds(0.00105); },
       "result.mean_step_time_seconds (0.00105) must be within 1% of the mean of "
       "result.step_times_seconds (1.05)"},
      {[](v1::ProbeResult& r) { r.set_mean_step_time_seconds(1.035); },
       "result.mean_step_time_seconds (1.035) must be within 1%"},
      {[](v1::ProbeResult& r) { r.set_backend("sim"); },
       "result.simulated (false) contradicts result.backend (\"sim\"): an OK result of the sim "
       "backend is simulated"},
  };
  for (const auto& c : cases) {
    v1::ProbeResult result = CompleteProbeResult();
    c.spoil(result);
    EXPECT_THAT(ValidateProbeResult(result).message(), HasSubstr(c.message));
    // A failed probe's series need not agree: a failed extrapolation is reported with them.
    result.set_outcome(v1::PROBE_INFRA_ERROR);
    EXPECT_TRUE(ValidateProbeResult(result).ok()) << c.message;
  }
}

TEST(ValidateProbeResultTest, OnlyTheSimBackendsResultsAreSimulated) {
  v1::ProbeResult result = CompleteProbeResult();
  result.set_simulated(true);
  for (v1::ProbeOutcome outcome : {v1::PROBE_OK, v1::PROBE_CRASH}) {
    result.set_outcome(outcome);
    EXPECT_EQ(ValidateProbeResult(result),
              absl::InvalidArgumentError(
                  "result.simulated (true) contradicts result.backend (\"cuda\"): only the sim "
                  "backend's results are simulated"));
  }
  result.set_backend("sim");
  EXPECT_TRUE(ValidateProbeResult(result).ok());
  // A failed sim probe (stopped at its deadline, say) has no figures to label.
  result.set_simulated(false);
  EXPECT_TRUE(ValidateProbeResult(result).ok());
}

TEST(ValidateProbeResultTest, AnOkResultsMeanIsItsStepTimesMean) {
  v1::ProbeResult result = CompleteProbeResult();
  result.set_mean_step_time_seconds(1.05 * 1.0099);
  EXPECT_TRUE(ValidateProbeResult(result).ok());
  // A gang member that timed nothing has no mean to check.
  result.clear_step_times_seconds();
  for (v1::ShortSteps& series : *result.mutable_short_steps()) series.clear_step_times_seconds();
  EXPECT_TRUE(ValidateProbeResult(result, /*gang_member=*/true).ok());
}

TEST(ValidateRegisterWorkerRequestTest, CommandTemplatesNeedTheCommandBackendAndValidNames) {
  v1::RegisterWorkerRequest request = Valid();
  request.add_command_templates("megatron-gpt");
  EXPECT_EQ(ValidateRegisterWorkerRequest(request),
            absl::InvalidArgumentError(
                "command_templates (1 names) need the command backend among backends"));
  request.add_backends("command");
  EXPECT_TRUE(ValidateRegisterWorkerRequest(request).ok());
  request.add_command_templates("megatron-gpt");
  EXPECT_THAT(ValidateRegisterWorkerRequest(request).message(),
              HasSubstr("command_templates[1] (\"megatron-gpt\") is listed twice"));
  request.set_command_templates(1, "python train.py");
  EXPECT_THAT(ValidateRegisterWorkerRequest(request).message(),
              HasSubstr("command_templates[1] (\"python train.py\") must be"));
}

TEST(ValidateProbeResultTest, AcceptsOkAndFailures) {
  EXPECT_TRUE(ValidateProbeResult(Ok()).ok());
  v1::ProbeResult oom;
  oom.set_outcome(v1::PROBE_OUT_OF_MEMORY);
  EXPECT_TRUE(ValidateProbeResult(oom).ok());
}

TEST(ValidateProbeResultTest, RejectsMalformedResults) {
  EXPECT_THAT(ValidateProbeResult(v1::ProbeResult()).message(), HasSubstr("result.outcome (0)"));

  v1::ProbeResult no_steps = Ok();
  no_steps.clear_step_times_seconds();
  EXPECT_THAT(ValidateProbeResult(no_steps).message(), HasSubstr("result.step_times_seconds"));
  EXPECT_TRUE(ValidateProbeResult(no_steps, /*gang_member=*/true).ok());

  v1::ProbeResult negative = Ok();
  negative.set_step_times_seconds(0, -1);
  EXPECT_EQ(ValidateProbeResult(negative),
            absl::InvalidArgumentError("result.step_times_seconds[0] (-1) must be in (0, 1e+06]"));

  v1::ProbeResult nan = Ok();
  nan.set_model_tflops_per_gpu(std::numeric_limits<double>::quiet_NaN());
  EXPECT_THAT(ValidateProbeResult(nan).message(), HasSubstr("result.model_tflops_per_gpu"));
}

}  // namespace
}  // namespace paratune
