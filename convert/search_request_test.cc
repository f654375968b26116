#include "convert/search_request.h"

#include <string>

#include "estimator/field_error.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;

v1::CreateSearchRequest Valid() {
  v1::CreateSearchRequest request;
  v1::SearchSpec& spec = *request.mutable_spec();
  spec.mutable_model()->set_preset("llama3.1-8b");
  spec.mutable_training()->set_global_batch_size(1024);
  spec.mutable_training()->set_seq_len(8192);
  spec.mutable_cluster()->mutable_gpu()->set_type("h100-94gb");
  spec.mutable_cluster()->set_num_nodes(4);
  spec.mutable_cluster()->set_gpus_per_node(4);
  return request;
}

absl::Status Validate(const v1::CreateSearchRequest& request) {
  return ValidateCreateSearchRequest(request).status();
}

TEST(ValidateCreateSearchRequestTest, FillsDefaults) {
  absl::StatusOr<ValidatedSearchRequest> validated = ValidateCreateSearchRequest(Valid());
  ASSERT_TRUE(validated.ok()) << validated.status();
  const v1::SearchSpec& spec = validated->spec;
  EXPECT_EQ(spec.policy(), v1::ADAPTIVE);
  EXPECT_DOUBLE_EQ(spec.adaptive().tolerance(), 0.02);
  EXPECT_DOUBLE_EQ(spec.adaptive().confidence_sigmas(), 2);
  EXPECT_EQ(spec.adaptive().max_in_flight(), 2);
  EXPECT_EQ(spec.adaptive().max_confirmations(), 2);
  EXPECT_EQ(spec.adaptive().confirmation_steps_factor(), 4);
  EXPECT_EQ(spec.top_k(), 8);
  EXPECT_EQ(spec.seed(), 1u);
  EXPECT_EQ(spec.probe().backend(), "sim");
  EXPECT_EQ(spec.probe().warmup_steps(), 2);
  EXPECT_EQ(spec.probe().timed_steps(), 5);
  // 0: derived per probe from its predicted duration (probe_timing.h).
  EXPECT_EQ(spec.probe().deadline_seconds(), 0);
  EXPECT_EQ(spec.probe().max_attempts(), 2);
  EXPECT_EQ(spec.probe().max_launch_failures(), 3);
  EXPECT_DOUBLE_EQ(spec.probe().startup_seconds(), 30);
  EXPECT_EQ(spec.space().memory_policy(), v1::MEASURE_RISKY);
  EXPECT_EQ(validated->resolved.cluster.world_size(), 16);
}

TEST(ValidateCreateSearchRequestTest, TheMemoryPolicyIsStoredInOneField) {
  v1::CreateSearchRequest request = Valid();
  request.mutable_spec()->mutable_space()->set_include_risky(true);
  absl::StatusOr<ValidatedSearchRequest> validated = ValidateCreateSearchRequest(request);
  ASSERT_TRUE(validated.ok()) << validated.status();
  EXPECT_EQ(validated->spec.space().memory_policy(), v1::MEASURE_RISKY);
  EXPECT_FALSE(validated->spec.space().include_risky());

  request = Valid();
  request.mutable_spec()->mutable_space()->set_memory_policy(v1::SAFE_ONLY);
  validated = ValidateCreateSearchRequest(request);
  ASSERT_TRUE(validated.ok()) << validated.status();
  EXPECT_EQ(validated->spec.space().memory_policy(), v1::SAFE_ONLY);
  EXPECT_FALSE(validated->resolved.plan_options.include_risky);
}

TEST(UpgradeStoredSpecTest, ASearchStoredBeforeMemoryPoliciesKeepsWhatItRanWith) {
  v1::SearchSpec spec;
  UpgradeStoredSpec(spec);
  EXPECT_EQ(spec.space().memory_policy(), v1::SAFE_ONLY);
  EXPECT_FALSE(spec.has_training());  // what it reads back is what was stored
  spec.mutable_space()->clear_memory_policy();
  spec.mutable_space()->set_include_risky(true);
  UpgradeStoredSpec(spec);
  EXPECT_EQ(spec.space().memory_policy(), v1::MEASURE_RISKY);
  EXPECT_FALSE(spec.space().include_risky());
  // A spec stored by this server is left as it is.
  spec.mutable_space()->set_memory_policy(v1::SAFE_ONLY);
  UpgradeStoredSpec(spec);
  EXPECT_EQ(spec.space().memory_policy(), v1::SAFE_ONLY);
}

TEST(UpgradeStoredSpecTest, ATorchTitanSearchStoredBeforeTorchCompileRanItsAsyncTpCompiled) {
  v1::SearchSpec spec;
  spec.mutable_training()->set_framework(v1::FRAMEWORK_TORCHTITAN);
  UpgradeStoredSpec(spec);
  EXPECT_FALSE(spec.training().torch_compile());  // eager: what the template ran without async TP
  spec.mutable_training()->set_tp_comm_overlap(true);
  UpgradeStoredSpec(spec);
  EXPECT_TRUE(spec.training().torch_compile());
  // Megatron-LM's TP overlap is Transformer Engine's, without compile.
  spec.mutable_training()->clear_torch_compile();
  spec.mutable_training()->set_framework(v1::FRAMEWORK_MEGATRON);
  UpgradeStoredSpec(spec);
  EXPECT_FALSE(spec.training().torch_compile());
}

TEST(ValidateCreateSearchRequestTest, KeepsExplicitSettings) {
  v1::CreateSearchRequest request = Valid();
  request.mutable_spec()->set_policy(v1::EXHAUSTIVE);
  request.mutable_spec()->set_seed(9);
  request.mutable_spec()->mutable_probe()->set_backend("cuda");
  request.mutable_spec()->mutable_probe()->set_timed_steps(10000);
  absl::StatusOr<ValidatedSearchRequest> validated = ValidateCreateSearchRequest(request);
  ASSERT_TRUE(validated.ok()) << validated.status();
  EXPECT_EQ(validated->spec.policy(), v1::EXHAUSTIVE);
  EXPECT_EQ(validated->spec.seed(), 9u);
  EXPECT_EQ(validated->spec.probe().backend(), "cuda");
  EXPECT_EQ(validated->spec.probe().timed_steps(), 10000);
}

TEST(ValidateCreateSearchRequestTest, ProbeSettingsOutOfRangeNameFieldAndValue) {
  v1::CreateSearchRequest request = Valid();
  request.mutable_spec()->mutable_probe()->set_timed_steps(20000);
  EXPECT_EQ(Validate(request),
            FieldError("spec.probe.timed_steps", "(20000) must be in [0, 10000]"));

  request = Valid();
  request.mutable_spec()->mutable_probe()->set_warmup_steps(-1);
  EXPECT_EQ(Validate(request), FieldError("spec.probe.warmup_steps", "(-1) must be in [0, 1000]"));

  request = Valid();
  request.mutable_spec()->mutable_probe()->set_backend("tpu");
  EXPECT_EQ(Validate(request), FieldError("spec.probe.backend",
                                          "(\"tpu\") must be one of sim, replay, command, cuda"));

  request = Valid();
  request.mutable_spec()->mutable_probe()->set_deadline_seconds(-5);
  EXPECT_THAT(Validate(request).message(), HasSubstr("spec.probe.deadline_seconds (-5)"));

  request = Valid();
  request.mutable_spec()->mutable_probe()->set_startup_seconds(4000);
  EXPECT_EQ(Validate(request), FieldError("spec.probe.startup_seconds",
                                          "(4000) must be in [0, 3600] (0: the backend's)"));

  request = Valid();
  request.mutable_spec()->mutable_probe()->set_max_attempts(101);
  EXPECT_THAT(Validate(request).message(), HasSubstr("spec.probe.max_attempts (101)"));

  request = Valid();
  request.mutable_spec()->mutable_probe()->set_max_launch_failures(-1);
  EXPECT_THAT(Validate(request).message(), HasSubstr("spec.probe.max_launch_failures (-1)"));

  request = Valid();
  request.mutable_spec()->set_top_k(10001);
  EXPECT_EQ(Validate(request), FieldError("spec.top_k", "(10001) must be in [0, 10000]"));
}

TEST(ValidateCreateSearchRequestTest, CommandBackendNeedsATemplateNameAndOnlyIt) {
  v1::CreateSearchRequest request = Valid();
  request.mutable_spec()->mutable_probe()->set_backend("command");
  EXPECT_EQ(Validate(request),
            FieldError("spec.probe.command_template",
                       "(\"\") must be 1 to 64 letters, digits, '_', '-' or '.'"));
  request.mutable_spec()->mutable_probe()->set_command_template("megatron-gpt");
  EXPECT_TRUE(Validate(request).ok());
  request.mutable_spec()->mutable_probe()->set_command_template("bash -c 'rm -rf /'");
  EXPECT_EQ(Validate(request).code(), absl::StatusCode::kInvalidArgument);

  request = Valid();
  request.mutable_spec()->mutable_probe()->set_command_template("megatron-gpt");
  EXPECT_EQ(Validate(request),
            FieldError("spec.probe.command_template",
                       "(\"megatron-gpt\") is only for backend command, not sim"));
  request = Valid();
  request.mutable_spec()->mutable_probe()->set_scope(static_cast<v1::ProbeScope>(9));
  EXPECT_EQ(Validate(request), FieldError("spec.probe.scope", "(9) is not a ProbeScope"));
}

TEST(ValidateCreateSearchRequestTest, CudaBackendRunsFp8WithBf16OrFp8Weights) {
  v1::CreateSearchRequest request = Valid();
  request.mutable_spec()->mutable_probe()->set_backend("cuda");
  EXPECT_TRUE(Validate(request).ok());
  request.mutable_spec()->mutable_training()->set_precision(v1::FP8);
  EXPECT_TRUE(Validate(request).ok());
  request.mutable_spec()->mutable_training()->set_distributed_optimizer(true);
  request.mutable_spec()->mutable_training()->set_fp8_param_gather(true);
  EXPECT_TRUE(Validate(request).ok());
}

TEST(ValidateCreateSearchRequestTest, Fp8NeedsFp8TensorCoresWhateverTheBackend) {
  v1::CreateSearchRequest request = Valid();
  request.mutable_spec()->mutable_training()->set_precision(v1::FP8);
  request.mutable_spec()->mutable_cluster()->mutable_gpu()->set_type("a100-80gb");
  EXPECT_EQ(Validate(request),
            FieldError("spec.training.precision",
                       "(FP8) needs fp8 tensor cores (compute capability 8.9 or later), and "
                       "cluster.gpu.type (\"a100-80gb\") is an Ampere GPU without them"));
  // A custom GPU is told apart by its bf16 peak.
  v1::GpuSpec& gpu = *request.mutable_spec()->mutable_cluster()->mutable_gpu();
  gpu.set_type("");
  gpu.set_memory_bytes(int64_t{80} << 30);
  gpu.set_peak_bf16_tflops(312);
  gpu.set_hbm_bandwidth_gbps(2039);
  gpu.set_nvlink_bandwidth_gbps(300);
  gpu.set_network_bandwidth_gbps(25);
  EXPECT_THAT(Validate(request).message(),
              HasSubstr("cluster.gpu.peak_bf16_tflops (312) is an Ampere GPU"));
}

TEST(ValidateCreateSearchRequestTest, DisplayNameIsLimited) {
  v1::CreateSearchRequest request = Valid();
  request.set_display_name(std::string(256, 'x'));
  EXPECT_TRUE(Validate(request).ok());
  request.set_display_name(std::string(257, 'x'));
  EXPECT_EQ(Validate(request), FieldError("display_name", "(257 bytes) must be at most 256 bytes"));
}

TEST(ValidateCreateSearchRequestTest, UnknownPolicyIsInvalid) {
  v1::CreateSearchRequest request = Valid();
  request.mutable_spec()->set_policy(static_cast<v1::SearchPolicy>(42));
  EXPECT_EQ(
      Validate(request),
      FieldError("spec.policy", "(42) is not a SearchPolicy; use ADAPTIVE, TOP_K or EXHAUSTIVE"));
}

TEST(ValidateCreateSearchRequestTest, AdaptiveSettingsAndBudgetNameFieldAndValue) {
  v1::CreateSearchRequest request = Valid();
  request.mutable_spec()->mutable_adaptive()->set_max_confirmations(0);
  absl::StatusOr<ValidatedSearchRequest> no_confirmation = ValidateCreateSearchRequest(request);
  ASSERT_TRUE(no_confirmation.ok());
  EXPECT_EQ(no_confirmation->spec.adaptive().max_confirmations(), 0);

  request.mutable_spec()->mutable_adaptive()->set_tolerance(-0.1);
  EXPECT_EQ(Validate(request),
            FieldError("spec.adaptive.tolerance", "(-0.1) must be in (0, 1], or 0 for 0.02"));
  request = Valid();
  request.mutable_spec()->mutable_adaptive()->set_confirmation_steps_factor(1);
  EXPECT_THAT(Validate(request).message(),
              HasSubstr("spec.adaptive.confirmation_steps_factor (1) must be in [2, 100]"));
  request = Valid();
  request.mutable_spec()->set_policy(v1::TOP_K);
  request.mutable_spec()->mutable_adaptive()->set_tolerance(0.05);
  EXPECT_EQ(Validate(request),
            FieldError("spec.adaptive", "is only for policy ADAPTIVE, not TOP_K"));
  request = Valid();
  request.mutable_spec()->mutable_budget()->set_deadline_seconds(-1);
  EXPECT_THAT(Validate(request).message(), HasSubstr("spec.budget.deadline_seconds (-1)"));
  request = Valid();
  request.mutable_spec()->mutable_budget()->set_max_probes(2'000'000);
  EXPECT_THAT(Validate(request).message(), HasSubstr("spec.budget.max_probes (2000000)"));
}

TEST(ValidateCreateSearchRequestTest, SpecErrorsComeFromTheConverterNamedFromTheRequest) {
  v1::CreateSearchRequest request = Valid();
  request.mutable_spec()->mutable_cluster()->set_num_nodes(0);
  EXPECT_EQ(Validate(request), FieldError("spec.cluster.num_nodes", "(0) must be in [1, 65536]"));
  request = Valid();
  request.mutable_spec()->mutable_space()->add_micro_batch_sizes(0);
  EXPECT_EQ(Validate(request),
            FieldError("spec.space.micro_batch_sizes[0]", "(0) must be in [1, 1024]"));
  request = Valid();
  request.mutable_spec()->mutable_space()->add_expert_parallel_sizes(8);
  EXPECT_THAT(Validate(request).message(),
              HasSubstr("spec.space.expert_parallel_sizes is set, but model"));
  request = Valid();
  for (int i = 0; i < 17; ++i)
    request.mutable_spec()->mutable_space()->add_expert_tensor_parallel_sizes(1);
  EXPECT_THAT(Validate(request).message(),
              HasSubstr("spec.space.expert_tensor_parallel_sizes has 17 entries"));
}

TEST(ProbeStepsOfTest, EachBackendRunsItsProbesItsOwnWay) {
  v1::ProbeSettings probe;
  ProbeSteps steps = ProbeStepsOf(probe);  // the sim
  EXPECT_EQ(steps.warmup_steps, 2);
  EXPECT_EQ(steps.timed_steps, 5);
  EXPECT_DOUBLE_EQ(steps.startup_seconds, kProbeStartupSeconds);
  EXPECT_TRUE(steps.short_steps);
  EXPECT_FALSE(steps.launch_per_count);

  probe.set_backend("cuda");
  EXPECT_TRUE(ProbeStepsOf(probe).short_steps);
  EXPECT_FALSE(ProbeStepsOf(probe).launch_per_count);

  probe.set_backend("command");
  steps = ProbeStepsOf(probe);
  EXPECT_TRUE(steps.short_steps);
  EXPECT_TRUE(steps.launch_per_count);
  EXPECT_DOUBLE_EQ(steps.startup_seconds, kDefaultCommandStartupSeconds);
  probe.set_startup_seconds(45);
  probe.set_warmup_steps(1);
  probe.set_timed_steps(3);
  steps = ProbeStepsOf(probe);
  EXPECT_DOUBLE_EQ(steps.startup_seconds, 45);
  EXPECT_EQ(steps.warmup_steps, 1);
  EXPECT_EQ(steps.timed_steps, 3);

  probe.set_backend("replay");
  EXPECT_FALSE(ProbeStepsOf(probe).short_steps);
}

TEST(ValidateCreateSearchRequestTest, ACommandSearchStoresTheStartUpItIsTimedWith) {
  v1::CreateSearchRequest request = Valid();
  request.mutable_spec()->mutable_probe()->set_backend("command");
  request.mutable_spec()->mutable_probe()->set_command_template("megatron-llama");
  absl::StatusOr<ValidatedSearchRequest> validated = ValidateCreateSearchRequest(request);
  ASSERT_TRUE(validated.ok()) << validated.status();
  EXPECT_DOUBLE_EQ(validated->spec.probe().startup_seconds(), kDefaultCommandStartupSeconds);
}

}  // namespace
}  // namespace paratune
