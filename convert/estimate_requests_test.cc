#include "convert/estimate_requests.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;

// The first reference row of Fujii et al. 2024: Llama-3.1-8B, s 8192, dp2 tp2 on 4 GPUs.
v1::EstimateRequest ReferenceRequest() {
  v1::EstimateRequest request;
  request.mutable_model()->set_preset("llama3.1-8b");
  request.mutable_training()->set_global_batch_size(1024);
  request.mutable_training()->set_seq_len(8192);
  request.mutable_cluster()->mutable_gpu()->set_type("h100-94gb");
  request.mutable_cluster()->set_num_nodes(1);
  request.mutable_cluster()->set_gpus_per_node(4);
  v1::ParallelConfig& config = *request.mutable_config();
  config.set_data_parallel(2);
  config.set_tensor_parallel(2);
  config.set_pipeline_parallel(1);
  config.set_context_parallel(1);
  config.set_micro_batch_size(1);
  return request;
}

TEST(AnswerEstimateTest, ReferenceConfiguration) {
  absl::StatusOr<v1::EstimateResponse> response = AnswerEstimate(ReferenceRequest());
  ASSERT_TRUE(response.ok()) << response.status();
  const v1::MemoryEstimate& memory = response->memory();
  ASSERT_EQ(memory.stages_size(), 1);
  // The paper's terms (44.87 + 22.64 GiB) and the default overheads, 0.5 GiB of them the CUDA
  // context.
  double paper = 0, overheads = 0;
  for (const v1::MemoryTerm& term : memory.stages(0).terms()) {
    const bool overhead = term.name() == "cuda_context" || term.name() == "nccl_buffers" ||
                          term.name() == "gradient_buckets" || term.name() == "pipeline_buffers" ||
                          term.name() == "fragmentation";
    (overhead ? overheads : paper) += static_cast<double>(term.bytes()) / (1 << 30);
  }
  EXPECT_NEAR(paper, 44.8726 + 22.6445, 1e-3);
  EXPECT_GT(overheads, 0.5);
  EXPECT_NEAR(static_cast<double>(memory.peak_bytes()) / (1 << 30), paper + overheads, 1e-6);
  EXPECT_EQ(memory.verdict(), v1::SAFE);
  EXPECT_DOUBLE_EQ(memory.safe_threshold(), 0.8);
  EXPECT_GT(response->performance().model_tflops_per_gpu(), 0);
}

TEST(AnswerEstimateTest, BadFieldsAreInvalidArgument) {
  v1::EstimateRequest request = ReferenceRequest();
  request.mutable_config()->set_tensor_parallel(3);
  absl::StatusOr<v1::EstimateResponse> response = AnswerEstimate(request);
  EXPECT_EQ(response.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(response.status().message(), HasSubstr("tensor_parallel (3)"));

  request = ReferenceRequest();
  request.set_safe_memory_fraction(2);
  EXPECT_EQ(AnswerEstimate(request).status().code(), absl::StatusCode::kInvalidArgument);
}

v1::PlanRequest PlanRequestFor16H100s() {
  v1::PlanRequest request;
  v1::SearchSpec& spec = *request.mutable_spec();
  spec.mutable_model()->set_preset("llama3.1-8b");
  spec.mutable_training()->set_global_batch_size(1024);
  spec.mutable_training()->set_seq_len(8192);
  spec.mutable_cluster()->mutable_gpu()->set_type("h100-80gb");
  spec.mutable_cluster()->set_num_nodes(2);
  spec.mutable_cluster()->set_gpus_per_node(8);
  return request;
}

TEST(AnswerEstimateTest, MixtureOfExpertsModelHasItsTermsAndExpertCommunication) {
  v1::EstimateRequest request = ReferenceRequest();
  request.mutable_model()->set_preset("mixtral-8x7b");
  request.mutable_training()->set_seq_len(4096);
  request.mutable_config()->set_expert_parallel(2);
  absl::StatusOr<v1::EstimateResponse> response = AnswerEstimate(request);
  ASSERT_TRUE(response.ok()) << response.status();
  for (const v1::StageMemory& stage : response->memory().stages()) {
    bool has_dispatcher_buffers = false;
    for (const v1::MemoryTerm& term : stage.terms()) {
      if (term.name() == "moe_dispatcher_buffers") has_dispatcher_buffers = term.bytes() > 0;
    }
    EXPECT_TRUE(has_dispatcher_buffers) << stage.stage();
  }
  EXPECT_GT(response->performance().ep_communication_seconds(), 0);

  // The same model on a dense request's terms: no expert parallelism, no exposed dispatch.
  request.mutable_config()->set_expert_parallel(1);
  request.mutable_config()->set_expert_tensor_parallel(1);
  response = AnswerEstimate(request);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->performance().ep_communication_seconds(), 0);
}

TEST(AnswerEstimateTest, DenseModelHasNoMixtureOfExpertsFigures) {
  absl::StatusOr<v1::EstimateResponse> response = AnswerEstimate(ReferenceRequest());
  ASSERT_TRUE(response.ok()) << response.status();
  for (const v1::MemoryTerm& term : response->memory().stages(0).terms()) {
    if (term.name() == "moe_dispatcher_buffers") {
      EXPECT_EQ(term.bytes(), 0);
    }
  }
  EXPECT_EQ(response->performance().ep_communication_seconds(), 0);
}

TEST(AnswerPlanTest, MixtureOfExpertsModelIsPlannedWithExpertLayouts) {
  v1::PlanRequest request = PlanRequestFor16H100s();
  request.mutable_spec()->mutable_model()->set_preset("qwen3-30b-a3b");
  request.mutable_spec()->mutable_training()->set_seq_len(4096);
  absl::StatusOr<v1::PlanResponse> response = AnswerPlan(request);
  ASSERT_TRUE(response.ok()) << response.status();
  ASSERT_GT(response->candidates_size(), 0);
  bool expert_parallel = false;
  for (const v1::Candidate& candidate : response->candidates()) {
    expert_parallel = expert_parallel || candidate.config().expert_parallel() > 1;
  }
  EXPECT_TRUE(expert_parallel);
}

TEST(AnswerPlanTest, LimitsCandidates) {
  v1::PlanRequest request = PlanRequestFor16H100s();
  request.set_limit(5);
  absl::StatusOr<v1::PlanResponse> response = AnswerPlan(request);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->candidates_size(), 5);
  EXPECT_EQ(response->counts().enumerated(), 175);
  request.set_limit(-1);
  EXPECT_EQ(AnswerPlan(request).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(AnswerPlanTest, CarriesTheMemoryMapBoundedByTheLimit) {
  v1::PlanRequest request = PlanRequestFor16H100s();
  absl::StatusOr<v1::PlanResponse> all = AnswerPlan(request);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_GT(all->memory_map().total_rows(), 5);
  EXPECT_EQ(all->memory_map().rows_size(), all->memory_map().total_rows());
  EXPECT_EQ(all->memory_map().capacity_bytes(), 81559LL * 1024 * 1024);
  request.set_limit(5);
  EXPECT_EQ(AnswerPlan(request)->memory_map().rows_size(), 5);
}

TEST(AnswerPlanTest, DetailedPlanIsWhatTheResponseWasMadeFrom) {
  v1::PlanRequest request = PlanRequestFor16H100s();
  request.set_limit(3);
  absl::StatusOr<DetailedPlan> detailed = AnswerPlanInDetail(request);
  ASSERT_TRUE(detailed.ok()) << detailed.status();
  EXPECT_EQ(detailed->response.SerializeAsString(), AnswerPlan(request)->SerializeAsString());
  EXPECT_EQ(static_cast<int64_t>(detailed->plan.memory_map.size()),
            detailed->response.counts().valid());
  EXPECT_EQ(detailed->plan.candidates[0].predicted.model_tflops_per_gpu,
            detailed->response.candidates(0).predicted().model_tflops_per_gpu());
  EXPECT_EQ(detailed->spec.cluster.world_size(), 16);
  EXPECT_EQ(detailed->params.gemm_efficiency_max,
            DefaultPerformanceParameters(detailed->spec.cluster.gpu()).gemm_efficiency_max);
}

TEST(AnswerPlanTest, Llama70BOn16H100sSearchesRecomputeAndAdvises) {
  v1::PlanRequest request = PlanRequestFor16H100s();
  request.mutable_spec()->mutable_model()->set_preset("llama3.1-70b");
  absl::StatusOr<DetailedPlan> planned = AnswerPlanInDetail(request);
  ASSERT_TRUE(planned.ok()) << planned.status();
  EXPECT_TRUE(planned->response.recompute_added());
  EXPECT_EQ(planned->response.memory_map().recompute_modes_size(), 3);
  EXPECT_EQ(planned->spec.plan_options.recompute_modes.size(), 3u);
  EXPECT_GT(planned->response.candidates_size(), 0);
  // Nothing fitted as requested: the advice is for the request, recompute first.
  ASSERT_GE(planned->response.advice_size(), 2);
  EXPECT_EQ(planned->response.advice(0).kind(), v1::ADVICE_RECOMPUTE);
  EXPECT_EQ(planned->response.advice(0).candidates(), planned->response.candidates_size());

  // Named modes are kept: with none only, nothing fits, and the plan says what would.
  request.mutable_spec()->mutable_space()->add_recompute_modes(v1::RECOMPUTE_NONE);
  absl::StatusOr<v1::PlanResponse> none = AnswerPlan(request);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_FALSE(none->recompute_added());
  EXPECT_EQ(none->candidates_size(), 0);
  ASSERT_GE(none->advice_size(), 2);
  EXPECT_EQ(none->advice(0).kind(), v1::ADVICE_RECOMPUTE);
  EXPECT_EQ(none->advice(0).recompute_modes_size(), 3);
  EXPECT_EQ(none->advice(0).candidates(), planned->response.candidates_size());
  EXPECT_EQ(none->advice(1).kind(), v1::ADVICE_NODES);
  EXPECT_EQ(none->advice(1).num_nodes(), 4);
}

}  // namespace
}  // namespace paratune
