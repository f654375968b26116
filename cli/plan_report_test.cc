#include "cli/plan_report.h"

#include <algorithm>
#include <string>

#include "convert/memory_map.h"
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

  std::string Explain(const PlanOptions& options, const ParallelDims& dims) const {
    const Plan plan = MakePlan(options);
    return FormatExplanation(
        ExplainConfiguration(model_, training_, cluster_, options, params_, plan, dims), dims,
        model_, training_, cluster_, options, plan, 20);
  }

  static ParallelDims Dims(int64_t dp, int64_t tp, int64_t pp, int64_t cp, int64_t b) {
    return MakeParallelDims(dp, tp, pp, cp, b);
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

TEST_F(PlanReportTest, ExplainsACandidateWithItsRankAndBreakdown) {
  const PlanOptions options;
  const Plan plan = MakePlan(options);
  const ParallelDims best = plan.candidates[0].config.dims();
  const std::string text = Explain(options, best);
  EXPECT_THAT(text, HasSubstr(": a candidate: #1 of "));
  EXPECT_THAT(text, HasSubstr("optimizer_states"));
  EXPECT_THAT(text, HasSubstr("TFLOP/s per GPU (+- "));
}

TEST_F(PlanReportTest, ExplainsARejectionWithTheFieldsAndValues) {
  const std::string text = Explain(PlanOptions(), Dims(1, 16, 1, 1, 1));
  EXPECT_THAT(text, HasSubstr("dp1 tp16 pp1 cp1 mbs1: rejected by a validity rule: "));
  EXPECT_THAT(text, HasSubstr("(16)"));
  EXPECT_THAT(text, Not(HasSubstr("optimizer_states")));
}

TEST_F(PlanReportTest, ExplainsWhatIsNotSearched) {
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
              HasSubstr("sp=off: not enumerated: sequence parallelism off with tp 2"));
}

TEST_F(PlanReportTest, ExplainsMemoryPruning) {
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

}  // namespace
}  // namespace paratune
