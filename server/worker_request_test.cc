#include "server/worker_request.h"

#include <limits>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

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
            absl::InvalidArgumentError("gpus[0].memory_bytes (0) must be > 0"));

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

v1::ProbeResult Ok() {
  v1::ProbeResult result;
  result.set_outcome(v1::PROBE_OK);
  result.add_step_times_seconds(1.5);
  result.set_mean_step_time_seconds(1.5);
  result.set_model_tflops_per_gpu(400);
  return result;
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
            absl::InvalidArgumentError("result.step_times_seconds[0] (-1) must be finite and > 0"));

  v1::ProbeResult nan = Ok();
  nan.set_model_tflops_per_gpu(std::numeric_limits<double>::quiet_NaN());
  EXPECT_THAT(ValidateProbeResult(nan).message(), HasSubstr("result.model_tflops_per_gpu"));
}

}  // namespace
}  // namespace paratune
