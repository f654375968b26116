#include "convert/plan_explanation.h"

#include <algorithm>
#include <string>

#include "absl/status/statusor.h"
#include "convert/estimate_requests.h"
#include "estimator/performance_parameters.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class PlanExplanationTest : public ::testing::Test {
 protected:
  // Llama-3.1-8B, s 8192, global batch 64, 2 nodes of 8 H100-80GB.
  PlanExplanationTest()
      : model_(*FindModelPreset("llama3.1-8b")),
        training_(*TrainingSpec::Create({64, 8192})),
        cluster_(*ClusterSpec::Create(*FindGpuPreset("h100-80gb"), 2, 8)),
        params_(DefaultPerformanceParameters(cluster_.gpu())) {}

  Plan MakePlan(const PlanOptions& options) const {
    return *PlanConfigurations(model_, training_, cluster_, options, params_);
  }

  std::string Explain(const PlanOptions& options, const ParallelDims& dims,
                      int64_t shown = 20) const {
    const Plan plan = MakePlan(options);
    return DescribeExplanation(
        ExplainConfiguration(model_, training_, cluster_, options, params_, plan, dims), dims,
        model_, training_, cluster_, options, plan, shown);
  }

  static ParallelDims Dims(int64_t dp, int64_t tp, int64_t pp, int64_t cp, int64_t b) {
    return MakeParallelDims(dp, tp, pp, cp, b);
  }

  ModelSpec model_;
  TrainingSpec training_;
  ClusterSpec cluster_;
  PerformanceParameters params_;
};

// The same run as a request of the API.
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

v1::ParallelConfig Config(int64_t dp, int64_t tp, int64_t pp, int64_t cp, int64_t b) {
  v1::ParallelConfig config;
  config.set_data_parallel(dp);
  config.set_tensor_parallel(tp);
  config.set_pipeline_parallel(pp);
  config.set_context_parallel(cp);
  config.set_micro_batch_size(b);
  return config;
}

TEST_F(PlanExplanationTest, ExplainsACandidateWithItsRank) {
  const PlanOptions options;
  const Plan plan = MakePlan(options);
  const ParallelDims best = plan.candidates[0].config.dims();
  const std::string text = Explain(options, best);
  EXPECT_THAT(text, HasSubstr("a candidate: #1 of "));
  EXPECT_THAT(text, HasSubstr(" in predicted order, "));
  EXPECT_THAT(text, Not(HasSubstr("beyond")));
  EXPECT_THAT(Explain(options, plan.candidates[1].config.dims(), /*shown=*/1),
              HasSubstr("a candidate: #2 of "));
  EXPECT_THAT(Explain(options, plan.candidates[1].config.dims(), /*shown=*/1),
              HasSubstr("; beyond the 1 the plan table shows (--limit)"));
}

TEST_F(PlanExplanationTest, ExplainsARejectionWithTheFieldsAndValues) {
  const std::string text = Explain(PlanOptions(), Dims(1, 16, 1, 1, 1));
  EXPECT_THAT(text, HasSubstr("rejected by a validity rule: "));
  EXPECT_THAT(text, HasSubstr("(16)"));
}

TEST_F(PlanExplanationTest, ExplainsWhatIsNotSearched) {
  PlanOptions options;
  EXPECT_THAT(Explain(options, Dims(2, 8, 1, 1, 32)),
              HasSubstr("not enumerated: micro-batch size 32 is not among the searched sizes "
                        "(1, 2, 4, 8, 16); --micro_batches sets them"));
  ParallelDims dims = Dims(8, 2, 1, 1, 1);
  dims.recompute = Recompute::kFull;
  EXPECT_THAT(Explain(options, dims),
              HasSubstr("recompute full is not among the searched modes (none); "
                        "--recompute_modes sets them"));
  dims = Dims(8, 1, 2, 1, 1);
  dims.virtual_pipeline = 4;
  EXPECT_THAT(Explain(options, dims), HasSubstr("--virtual_pipeline_sizes sets them"));
  dims = Dims(8, 2, 1, 1, 1);
  dims.sequence_parallel = false;
  EXPECT_THAT(Explain(options, dims),
              HasSubstr("not enumerated: sequence parallelism off with tp 2"));
}

TEST_F(PlanExplanationTest, ExplainsMemoryPruning) {
  const PlanOptions options;
  const std::string oom = Explain(options, Dims(16, 1, 1, 1, 4));
  EXPECT_THAT(oom, HasSubstr("pruned, out of memory: peak "));
  EXPECT_THAT(oom, HasSubstr("on stage 0 = "));
  EXPECT_THAT(oom, HasSubstr("of the 79.65 GiB capacity (OOM above 100%)"));

  const Plan plan = MakePlan(options);
  const auto risky = std::find_if(
      plan.memory_map.begin(), plan.memory_map.end(),
      [](const MemoryMapEntry& entry) { return entry.verdict == MemoryVerdict::kRisky; });
  ASSERT_NE(risky, plan.memory_map.end());
  EXPECT_THAT(Explain(options, risky->dims),
              HasSubstr("at or above the 80.0% SAFE threshold; --memory_policy=measure_risky "
                        "(the default) keeps RISKY configurations"));
}

TEST_F(PlanExplanationTest, AnswersACandidateWithItsRankAndEstimate) {
  v1::ExplainRequest request = Request(v1::ParallelConfig());
  const absl::StatusOr<v1::PlanResponse> plan = AnswerPlan(request.plan());
  ASSERT_TRUE(plan.ok()) << plan.status();
  *request.mutable_config() = plan->candidates(0).config();
  const absl::StatusOr<v1::ExplainResponse> answer = AnswerExplain(request);
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_EQ(answer->outcome(), v1::EXPLAINED_CANDIDATE);
  EXPECT_EQ(answer->rank(), 1);
  EXPECT_THAT(answer->reason(), HasSubstr("a candidate: #1 of "));
  EXPECT_GT(answer->estimate().memory().peak_bytes(), 0);
  EXPECT_GT(answer->estimate().performance().model_tflops_per_gpu(), 0);
}

TEST_F(PlanExplanationTest, AnswersARejectionWithoutAnEstimate) {
  const absl::StatusOr<v1::ExplainResponse> answer = AnswerExplain(Request(Config(1, 16, 1, 1, 1)));
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_EQ(answer->outcome(), v1::EXPLAINED_REJECTED);
  EXPECT_EQ(answer->rank(), 0);
  EXPECT_FALSE(answer->has_estimate());
}

TEST_F(PlanExplanationTest, AnswersMemoryPruningWithTheEstimate) {
  const absl::StatusOr<v1::ExplainResponse> answer = AnswerExplain(Request(Config(16, 1, 1, 1, 4)));
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_EQ(answer->outcome(), v1::EXPLAINED_OUT_OF_MEMORY);
  EXPECT_GT(answer->estimate().memory().fraction_of_capacity(), 1);
}

TEST_F(PlanExplanationTest, RefusesAnInvalidSpecNamingTheField) {
  v1::ExplainRequest request = Request(Config(16, 1, 1, 1, 1));
  request.mutable_plan()->mutable_spec()->mutable_model()->set_preset("llama9");
  const absl::StatusOr<v1::ExplainResponse> answer = AnswerExplain(request);
  EXPECT_EQ(answer.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(answer.status().message(), HasSubstr("llama9"));
}

}  // namespace
}  // namespace paratune
