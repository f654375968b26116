#include "cli/plan_report.h"

#include <algorithm>
#include <string>

#include "convert/memory_map.h"
#include "estimator/cluster_spec.h"
#include "estimator/model_spec.h"
#include "estimator/performance_parameters.h"
#include "estimator/planner.h"
#include "estimator/training_spec.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class PlanReportTest : public ::testing::Test {
 protected:
  // Llama-3.1-8B, s 8192, global batch 64, 2 nodes of 8 H100-80GB.
  PlanReportTest()
      : model_(*FindModelPreset("llama3.1-8b")),
        training_(*TrainingSpec::Create({64, 8192})),
        cluster_(*ClusterSpec::Create(*FindGpuPreset("h100-80gb"), 2, 8)),
        params_(DefaultPerformanceParameters(cluster_.gpu())) {}

  Plan MakePlan(const PlanOptions& options) const {
    return *PlanConfigurations(model_, training_, cluster_, options, params_);
  }

  std::string Map(const PlanOptions& options, int64_t limit = 0, bool color = false) const {
    return FormatMemoryMap(
        MemoryMapToProto(MakePlan(options), options, cluster_.gpu().memory_bytes, limit), color);
  }

  ModelSpec model_;
  TrainingSpec training_;
  ClusterSpec cluster_;
  PerformanceParameters params_;
};

TEST_F(PlanReportTest, MemoryMapHasOneRowPerShapeAndOneColumnPerMicroBatch) {
  const std::string map = Map(PlanOptions());
  EXPECT_THAT(map, HasSubstr("share of 79.65 GiB (SAFE below 80.0%, RISKY up to 100%, OOM "
                             "above; - breaks a rule)"));
  EXPECT_THAT(map,
              HasSubstr("tp  cp  pp  dp      mbs 1      mbs 2      mbs 4      mbs 8    mbs 16"));
  EXPECT_THAT(map, Not(HasSubstr("recompute")));
  // tp 1 on 16 GPUs: dp 16 x micro-batch 8 does not divide the global batch of 64.
  EXPECT_THAT(map, HasSubstr("\n 1   1   1  16   124% OOM   184% OOM   303% OOM          -"
                             "         -\n"));
  EXPECT_THAT(map, HasSubstr("\n 8   1   2   1   18% SAFE   25% SAFE   39% SAFE   66% SAFE"
                             "  121% OOM\n"));
}

TEST_F(PlanReportTest, MemoryMapShowsVirtualPipelineAndRecomputeWhenSearched) {
  PlanOptions options;
  options.virtual_pipeline_sizes = {1, 2};
  options.recompute_modes = {Recompute::kNone, Recompute::kFull};
  const std::string map = Map(options);
  EXPECT_THAT(map, HasSubstr("tp  cp  pp  dp  vp  recompute"));
  EXPECT_THAT(map, HasSubstr("full"));
}

TEST_F(PlanReportTest, MemoryMapIsBoundedByTheLimit) {
  const std::string all = Map(PlanOptions());
  EXPECT_THAT(all, Not(HasSubstr("rows shown")));
  const std::string three = Map(PlanOptions(), 3);
  EXPECT_EQ(std::count(three.begin(), three.end(), '\n'), 1 + 2 + 3 + 1);
  EXPECT_THAT(three, HasSubstr("(3 of "));
  EXPECT_THAT(three, HasSubstr(" rows shown: those holding the best predicted candidates; "
                               "--limit=0 shows all)\n"));
}

TEST_F(PlanReportTest, MemoryMapColoursEachVerdictOnlyWhenAsked) {
  const std::string plain = Map(PlanOptions());
  EXPECT_THAT(plain, Not(HasSubstr("\033[")));
  const std::string colored = Map(PlanOptions(), 0, /*color=*/true);
  EXPECT_THAT(colored, HasSubstr("\033[31m124% OOM\033[0m"));
  EXPECT_THAT(colored, HasSubstr("\033[32m18% SAFE\033[0m"));
  EXPECT_THAT(colored, HasSubstr("\033[2m-\033[0m"));
  // Colour sequences take no columns: the columns line up as without them.
  EXPECT_THAT(colored, HasSubstr("\n 8   1   2   1   \033[32m18% SAFE\033[0m"));
}

TEST(FormatExplanationTest, PrintsTheConfigurationTheReasonAndTheEstimate) {
  v1::ParallelConfig config;
  config.set_data_parallel(2);
  config.set_tensor_parallel(8);
  config.set_pipeline_parallel(1);
  config.set_context_parallel(1);
  config.set_micro_batch_size(1);
  v1::ExplainResponse explanation;
  explanation.set_outcome(v1::EXPLAINED_CANDIDATE);
  explanation.set_reason("a candidate: #1 of 12 in predicted order");
  explanation.set_rank(1);
  v1::StageMemory& stage = *explanation.mutable_estimate()->mutable_memory()->add_stages();
  v1::MemoryTerm& term = *stage.add_terms();
  term.set_name("optimizer_states");
  term.set_bytes(1 << 30);
  explanation.mutable_estimate()->mutable_performance()->set_model_tflops_per_gpu(400);
  const std::string text = FormatExplanation(config, explanation);
  EXPECT_THAT(text, HasSubstr("dp2 tp8 pp1 cp1 mbs1: a candidate: #1 of 12 in predicted order\n"));
  EXPECT_THAT(text, HasSubstr("optimizer_states"));
  EXPECT_THAT(text, HasSubstr("TFLOP/s per GPU (+- "));

  explanation.clear_estimate();
  explanation.set_reason("rejected by a validity rule: ...");
  EXPECT_EQ(FormatExplanation(config, explanation),
            "dp2 tp8 pp1 cp1 mbs1: rejected by a validity rule: ...\n");
}

}  // namespace
}  // namespace paratune
