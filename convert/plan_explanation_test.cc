#include "convert/plan_explanation.h"

#include <string>

#include "absl/status/statusor.h"
#include "convert/estimate_requests.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

v1::ParallelConfig Config(int64_t dp, int64_t tp, int64_t pp, int64_t cp, int64_t b) {
  v1::ParallelConfig config;
  config.set_data_parallel(dp);
  config.set_tensor_parallel(tp);
  config.set_pipeline_parallel(pp);
  config.set_context_parallel(cp);
  config.set_micro_batch_size(b);
  return config;
}

// `config` of Llama-3.1-8B, s 8192, global batch 64, on 2 nodes of 8 H100-80GB.
v1::ExplainRequest Request(const v1::ParallelConfig& config) {
  v1::ExplainRequest request;
  v1::SearchSpec& spec = *request.mutable_plan()->mutable_spec();
  spec.mutable_model()->set_preset("llama3.1-8b");
  spec.mutable_training()->set_global_batch_size(64);
  spec.mutable_training()->set_seq_len(8192);
  spec.mutable_cluster()->mutable_gpu()->set_type("h100-80gb");
  spec.mutable_cluster()->set_num_nodes(2);
  spec.mutable_cluster()->set_gpus_per_node(8);
  *request.mutable_config() = config;
  return request;
}

v1::ExplainResponse Explain(const v1::ExplainRequest& request) {
  const absl::StatusOr<v1::ExplainResponse> answer = AnswerExplain(request);
  EXPECT_TRUE(answer.ok()) << answer.status();
  return answer.ok() ? *answer : v1::ExplainResponse();
}

// The configuration of the plan's candidate `rank` (from 0).
v1::ParallelConfig Candidate(const v1::PlanRequest& request, int rank) {
  v1::PlanRequest all = request;
  all.set_limit(0);
  const absl::StatusOr<v1::PlanResponse> plan = AnswerPlan(all);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return plan.ok() && plan->candidates_size() > rank ? plan->candidates(rank).config()
                                                     : v1::ParallelConfig();
}

TEST(AnswerExplainTest, ACandidateWithItsRankAndEstimate) {
  v1::ExplainRequest request = Request(v1::ParallelConfig());
  *request.mutable_config() = Candidate(request.plan(), 0);
  const v1::ExplainResponse answer = Explain(request);
  EXPECT_EQ(answer.outcome(), v1::EXPLAINED_CANDIDATE);
  EXPECT_EQ(answer.rank(), 1);
  EXPECT_THAT(answer.reason(), HasSubstr("a candidate: #1 of "));
  EXPECT_THAT(answer.reason(), HasSubstr(" in predicted order, "));
  EXPECT_THAT(answer.reason(), Not(HasSubstr("beyond")));
  EXPECT_GT(answer.estimate().memory().peak_bytes(), 0);
  EXPECT_GT(answer.estimate().performance().model_tflops_per_gpu(), 0);
}

TEST(AnswerExplainTest, SaysWhenACandidateIsBeyondThePlanTable) {
  v1::ExplainRequest request = Request(v1::ParallelConfig());
  *request.mutable_config() = Candidate(request.plan(), 1);
  request.mutable_plan()->set_limit(1);
  const v1::ExplainResponse answer = Explain(request);
  EXPECT_EQ(answer.rank(), 2);
  EXPECT_THAT(answer.reason(), HasSubstr("; beyond the 1 the plan table shows (--limit)"));
}

TEST(AnswerExplainTest, ARejectionWithTheFieldsAndValuesAndNoEstimate) {
  const v1::ExplainResponse answer = Explain(Request(Config(1, 16, 1, 1, 1)));
  EXPECT_EQ(answer.outcome(), v1::EXPLAINED_REJECTED);
  EXPECT_EQ(answer.rank(), 0);
  EXPECT_THAT(answer.reason(), HasSubstr("rejected by a validity rule: "));
  EXPECT_THAT(answer.reason(), HasSubstr("(16)"));
  EXPECT_FALSE(answer.has_estimate());
}

TEST(AnswerExplainTest, ExpertRulesBrokenByADenseModel) {
  v1::ParallelConfig config = Config(8, 2, 1, 1, 1);
  config.set_expert_parallel(2);
  v1::ExplainResponse answer = Explain(Request(config));
  EXPECT_EQ(answer.outcome(), v1::EXPLAINED_REJECTED);
  EXPECT_EQ(answer.reason(),
            "rejected by a validity rule: config.expert_parallel (2) > 1 needs experts to split; "
            "model.moe.num_experts is 0 (a dense model)");
  config.set_expert_parallel(1);
  config.set_expert_tensor_parallel(1);
  answer = Explain(Request(config));
  EXPECT_EQ(answer.outcome(), v1::EXPLAINED_REJECTED);
  EXPECT_EQ(answer.reason(),
            "rejected by a validity rule: config.expert_tensor_parallel (1) other than "
            "config.tensor_parallel (2) needs experts to split; model.moe.num_experts is 0 (a "
            "dense model)");
}

TEST(AnswerExplainTest, WhatIsNotSearchedAndTheFlagThatSearchesIt) {
  v1::ExplainResponse answer = Explain(Request(Config(2, 8, 1, 1, 32)));
  EXPECT_EQ(answer.outcome(), v1::EXPLAINED_NOT_SEARCHED);
  EXPECT_THAT(answer.reason(),
              HasSubstr("not enumerated: micro-batch size 32 is not among the searched sizes "
                        "(1, 2, 4, 8, 16); --micro_batches sets them"));
  v1::ParallelConfig config = Config(8, 2, 1, 1, 1);
  config.set_recompute(v1::RECOMPUTE_FULL);
  EXPECT_THAT(Explain(Request(config)).reason(),
              HasSubstr("recompute full is not among the searched modes (none); "
                        "--recompute_modes sets them"));
  config = Config(8, 1, 2, 1, 1);
  config.set_virtual_pipeline(4);
  EXPECT_THAT(Explain(Request(config)).reason(), HasSubstr("--virtual_pipeline_sizes sets them"));
  config = Config(8, 2, 1, 1, 1);
  config.set_sequence_parallel(false);
  EXPECT_THAT(Explain(Request(config)).reason(),
              HasSubstr("not enumerated: sequence parallelism off with tp 2"));
}

TEST(AnswerExplainTest, MemoryPruningWithTheFigures) {
  const v1::ExplainResponse oom = Explain(Request(Config(16, 1, 1, 1, 4)));
  EXPECT_EQ(oom.outcome(), v1::EXPLAINED_OUT_OF_MEMORY);
  EXPECT_THAT(oom.reason(), HasSubstr("pruned, out of memory: peak "));
  EXPECT_THAT(oom.reason(), HasSubstr("on stage 0 = "));
  EXPECT_THAT(oom.reason(), HasSubstr("of the 79.65 GiB capacity (OOM above 100%)"));
  EXPECT_GT(oom.estimate().memory().fraction_of_capacity(), 1);

  // A RISKY configuration of the map, under a policy that probes SAFE ones only.
  v1::ExplainRequest request = Request(v1::ParallelConfig());
  request.mutable_plan()->mutable_spec()->mutable_space()->set_memory_policy(v1::SAFE_ONLY);
  const absl::StatusOr<v1::PlanResponse> plan = AnswerPlan(request.plan());
  ASSERT_TRUE(plan.ok()) << plan.status();
  for (const v1::MemoryMapRow& row : plan->memory_map().rows()) {
    for (const v1::MemoryMapCell& cell : row.cells()) {
      if (cell.verdict() != v1::RISKY || request.config().micro_batch_size() > 0) continue;
      *request.mutable_config() = row.shape();
      request.mutable_config()->set_micro_batch_size(cell.micro_batch_size());
    }
  }
  ASSERT_GT(request.config().micro_batch_size(), 0) << "no RISKY configuration";
  const v1::ExplainResponse risky = Explain(request);
  EXPECT_EQ(risky.outcome(), v1::EXPLAINED_RISKY);
  EXPECT_THAT(risky.reason(),
              HasSubstr("at or above the 80.0% SAFE threshold; --memory_policy=measure_risky "
                        "(the default) keeps RISKY configurations"));
}

TEST(AnswerExplainTest, RefusesAnInvalidSpecNamingTheValue) {
  v1::ExplainRequest request = Request(Config(16, 1, 1, 1, 1));
  request.mutable_plan()->mutable_spec()->mutable_model()->set_preset("llama9");
  const absl::StatusOr<v1::ExplainResponse> answer = AnswerExplain(request);
  EXPECT_EQ(answer.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(answer.status().message(), HasSubstr("llama9"));
}

}  // namespace
}  // namespace paratune
