#include "estimator/planner.h"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;

class PlannerTest : public ::testing::Test {
 protected:
  // Llama-3.1-8B, s 8192, global batch 1024, 2 nodes of 8 H100-80GB.
  PlannerTest()
      : model_(*FindModelPreset("llama3.1-8b")),
        training_(*TrainingSpec::Create({1024, 8192})),
        cluster_(*ClusterSpec::Create(*FindGpuPreset("h100-80gb"), 2, 8)),
        params_(DefaultPerformanceParameters(cluster_.gpu())) {}

  absl::StatusOr<Plan> MakePlan(const PlanOptions& options) const {
    return PlanConfigurations(model_, training_, cluster_, options, params_);
  }

  ModelSpec model_;
  TrainingSpec training_;
  ClusterSpec cluster_;
  PerformanceParameters params_;
};

TEST_F(PlannerTest, CountsAddUp) {
  absl::StatusOr<Plan> plan = MakePlan(PlanOptions());
  ASSERT_TRUE(plan.ok()) << plan.status();
  // 16 = 2^4 splits into (dp, tp, pp, cp) in C(7, 3) = 35 ways, times 5 micro-batch sizes.
  EXPECT_EQ(plan->counts.enumerated, 175);
  int64_t rejected = 0;
  for (int64_t count : plan->rejections) rejected += count;
  EXPECT_EQ(plan->rejections[static_cast<int>(Rejection::kValid)], 0);
  EXPECT_EQ(plan->rejections[static_cast<int>(Rejection::kWorldSizeMismatch)], 0);
  EXPECT_EQ(plan->counts.valid + rejected, plan->counts.enumerated);
  EXPECT_EQ(plan->counts.safe + plan->counts.risky + plan->counts.out_of_memory,
            plan->counts.valid);
  EXPECT_EQ(static_cast<int64_t>(plan->candidates.size()), plan->counts.safe);
  // tp 16 > 8 GPUs per node and tp x cp > 8 are rejected by placement.
  EXPECT_GT(plan->rejections[static_cast<int>(Rejection::kTpCpAcrossNodes)], 0);
  EXPECT_GT(plan->counts.safe, 0);
  EXPECT_GT(plan->counts.out_of_memory, 0);  // e.g. dp16 mbs16 holds 16 x 8192 tokens
}

TEST_F(PlannerTest, CandidatesAreSafeValidAndOrdered) {
  absl::StatusOr<Plan> plan = MakePlan(PlanOptions());
  ASSERT_TRUE(plan.ok());
  std::set<std::string> seen;
  for (size_t i = 0; i < plan->candidates.size(); ++i) {
    const PlannedConfig& c = plan->candidates[i];
    EXPECT_EQ(c.memory.verdict, MemoryVerdict::kSafe);
    EXPECT_EQ(CheckRules(model_, training_, cluster_, {}, c.config.dims()), Rejection::kValid);
    EXPECT_EQ(c.config.virtual_pipeline(), 1);
    EXPECT_EQ(c.config.recompute(), Recompute::kNone);
    EXPECT_EQ(c.config.sequence_parallel(), c.config.tp() > 1);
    EXPECT_TRUE(seen.insert(c.config.ToString()).second) << c.config.ToString();
    if (i > 0) {
      EXPECT_GE(plan->candidates[i - 1].predicted.model_tflops_per_gpu,
                c.predicted.model_tflops_per_gpu);
    }
  }
  // The best is a plausible Hopper throughput for this model.
  ASSERT_FALSE(plan->candidates.empty());
  EXPECT_GT(plan->candidates[0].predicted.model_tflops_per_gpu, 300);
  EXPECT_LT(plan->candidates[0].predicted.model_tflops_per_gpu, 650);
}

TEST_F(PlannerTest, IncludeRiskyAndSafeFraction) {
  PlanOptions options;
  options.memory.safe_fraction = 0.3;
  absl::StatusOr<Plan> strict = MakePlan(options);
  options.include_risky = true;
  absl::StatusOr<Plan> risky = MakePlan(options);
  ASSERT_TRUE(strict.ok() && risky.ok());
  ASSERT_GT(strict->counts.risky, 0);
  EXPECT_EQ(strict->counts.risky, risky->counts.risky);
  EXPECT_EQ(risky->candidates.size(), strict->candidates.size() + strict->counts.risky);
  const absl::StatusOr<Plan> lenient = MakePlan(PlanOptions());
  ASSERT_TRUE(lenient.ok());
  EXPECT_GT(lenient->counts.safe, strict->counts.safe);
}

TEST_F(PlannerTest, MicroBatchSizesAreDeduplicated) {
  PlanOptions options;
  options.micro_batch_sizes = {2, 1, 2};
  absl::StatusOr<Plan> plan = MakePlan(options);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->counts.enumerated, 35 * 2);
  for (const PlannedConfig& c : plan->candidates) EXPECT_LE(c.config.micro_batch(), 2);
}

TEST_F(PlannerTest, CountEnumeratedConfigurationsAgreesWithThePlan) {
  PlanOptions options;
  EXPECT_EQ(CountEnumeratedConfigurations(model_, training_, cluster_.world_size(), options),
            MakePlan(options)->counts.enumerated);
  options.micro_batch_sizes = {1, 2, 4};
  options.virtual_pipeline_sizes = {1, 2, 4};
  options.recompute_modes = {Recompute::kNone, Recompute::kFull};
  EXPECT_EQ(CountEnumeratedConfigurations(model_, training_, cluster_.world_size(), options),
            MakePlan(options)->counts.enumerated);
  EXPECT_EQ(CountEnumeratedConfigurations(model_, training_, 0, options), 0);
  options.dp_sharding_modes = {DataParallelSharding::kNone, DataParallelSharding::kFull};
  options.dp_shard_groups = {0, 2, 4};
  EXPECT_EQ(CountEnumeratedConfigurations(model_, training_, cluster_.world_size(), options),
            MakePlan(options)->counts.enumerated);
}

TEST_F(PlannerTest, ShardingModesAndHybridGroupsAreEnumerated) {
  PlanOptions options;
  options.micro_batch_sizes = {1};
  // By default the training's own mode alone: 35 layouts of 16 GPUs.
  EXPECT_EQ(MakePlan(options)->counts.enumerated, 35);
  EXPECT_EQ(SearchedDataParallelShardings(training_, options),
            std::vector<DataParallelSharding>{DataParallelSharding::kOptimizer});
  // none and full, full also in groups of 2 where 2 properly divides dp: of the 35 layouts, 1
  // has dp 16, 3 dp 8, 6 dp 4, 10 dp 2 (where 2 is no proper divisor) and 15 dp 1, so
  // 35 + 35 + 10 are enumerated.
  options.dp_sharding_modes = {DataParallelSharding::kNone, DataParallelSharding::kFull};
  options.dp_shard_groups = {0, 2};
  absl::StatusOr<Plan> plan = MakePlan(options);
  ASSERT_TRUE(plan.ok()) << plan.status();
  int64_t hybrid = 0;
  for (const MemoryMapEntry& entry : plan->memory_map) {
    if (entry.dims.dp_shard_group == 0) continue;
    ++hybrid;
    EXPECT_EQ(entry.dims.dp_sharding, DataParallelSharding::kFull);
    EXPECT_GT(entry.dims.dp, 2);
  }
  EXPECT_GT(hybrid, 0);
  EXPECT_EQ(plan->counts.enumerated, 80);
  options.dp_shard_groups = {-1};
  EXPECT_EQ(MakePlan(options).status().message(),
            "space.dp_shard_groups[0] (-1) must be in [0, 4194304]; 0 shards over all "
            "data-parallel ranks");
}

TEST_F(PlannerTest, AllowingTpCpAcrossNodes) {
  PlanOptions options;
  options.rules.allow_tp_cp_across_nodes = true;
  absl::StatusOr<Plan> plan = MakePlan(options);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->rejections[static_cast<int>(Rejection::kTpCpAcrossNodes)], 0);
}

TEST_F(PlannerTest, InvalidOptionsNameTheField) {
  PlanOptions options;
  options.micro_batch_sizes = {1, 0};
  absl::StatusOr<Plan> plan = MakePlan(options);
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(plan.status().message(), "space.micro_batch_sizes[1] (0) must be in [1, 1024]");

  options = PlanOptions();
  options.memory.safe_fraction = 1.5;
  plan = MakePlan(options);
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(plan.status().message(), HasSubstr("space.safe_memory_fraction (1.5)"));
  options.memory.safe_fraction = 0;
  EXPECT_EQ(MakePlan(options).status().code(), absl::StatusCode::kInvalidArgument);

  options = PlanOptions();
  options.memory.cuda_context_bytes = -1;
  EXPECT_EQ(MakePlan(options).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(PlannerScaleTest, Llama405bOn16384Gpus) {
  const ModelSpec model = *FindModelPreset("llama3.1-405b");
  const TrainingSpec training = *TrainingSpec::Create({2048, 8192});
  const ClusterSpec cluster = *ClusterSpec::Create(*FindGpuPreset("h100-80gb"), 2048, 8);
  absl::StatusOr<Plan> plan = PlanConfigurations(model, training, cluster, PlanOptions(),
                                                 DefaultPerformanceParameters(cluster.gpu()));
  ASSERT_TRUE(plan.ok());
  // 2^14 splits into 4 factors in C(17, 3) = 680 ways.
  EXPECT_EQ(plan->counts.enumerated, 680 * 5);
  EXPECT_GT(plan->counts.valid, 0);
  // 126 layers allow only pp 1 or 2 with power-of-two GPU counts (Meta used uneven stages),
  // and tp x cp stays within a node, so no even split fits 405B in 80 GB.
  EXPECT_GT(plan->rejections[static_cast<int>(Rejection::kPpLayers)], 0);
  EXPECT_EQ(plan->counts.safe, 0);
  EXPECT_TRUE(plan->candidates.empty());
}

TEST(PlannerScaleTest, Llama70bNeedsModelParallelism) {
  const ModelSpec model = *FindModelPreset("llama3.1-70b");
  const TrainingSpec training = *TrainingSpec::Create({512, 8192});
  const ClusterSpec cluster = *ClusterSpec::Create(*FindGpuPreset("h100-80gb"), 8, 8);
  absl::StatusOr<Plan> plan = PlanConfigurations(model, training, cluster, PlanOptions(),
                                                 DefaultPerformanceParameters(cluster.gpu()));
  ASSERT_TRUE(plan.ok());
  ASSERT_FALSE(plan->candidates.empty());
  for (const PlannedConfig& c : plan->candidates) {
    // Weights and gradients alone, 6 bytes x 70.6e9 = 424 GB, must be split 8 ways.
    EXPECT_GE(c.config.tp() * c.config.pp(), 8) << c.config.ToString();
  }
  EXPECT_GT(plan->candidates[0].predicted.model_tflops_per_gpu, 250);
  EXPECT_LT(plan->candidates[0].predicted.model_tflops_per_gpu, 600);
}

TEST(PlannerScaleTest, Llama405bFitsWithUnevenStagesVirtualPipelineAndRecompute) {
  const ModelSpec model = *FindModelPreset("llama3.1-405b");
  const TrainingSpec training = *TrainingSpec::Create({2048, 8192});
  const ClusterSpec cluster = *ClusterSpec::Create(*FindGpuPreset("h100-80gb"), 2048, 8);
  PlanOptions options;
  options.virtual_pipeline_sizes = {1, 2, 4, 8};
  options.recompute_modes = {Recompute::kNone, Recompute::kFull};
  options.rules.allow_uneven_pipeline = true;
  absl::StatusOr<Plan> plan = PlanConfigurations(model, training, cluster, options,
                                                 DefaultPerformanceParameters(cluster.gpu()));
  ASSERT_TRUE(plan.ok());
  ASSERT_FALSE(plan->candidates.empty());
  EXPECT_EQ(static_cast<int64_t>(plan->memory_map.size()), plan->counts.valid);
  bool uneven = false, interleaved = false, full = false;
  for (const PlannedConfig& c : plan->candidates) {
    uneven |= model.num_layers() % c.config.pp() != 0;
    interleaved |= c.config.virtual_pipeline() > 1;
    full |= c.config.recompute() == Recompute::kFull;
  }
  EXPECT_TRUE(uneven);
  EXPECT_TRUE(interleaved);
  EXPECT_TRUE(full);
}

class PlannerExplainTest : public PlannerTest {
 protected:
  ConfigurationExplanation Explain(const PlanOptions& options, const Plan& plan,
                                   const ParallelDims& dims) const {
    return ExplainConfiguration(model_, training_, cluster_, options, params_, plan, dims);
  }

  static ParallelDims Dims(int64_t dp, int64_t tp, int64_t pp, int64_t cp, int64_t b) {
    return MakeParallelDims(dp, tp, pp, cp, b);
  }
};

TEST_F(PlannerExplainTest, AgreesWithThePlanOnEveryValidConfiguration) {
  const PlanOptions options;
  absl::StatusOr<Plan> plan = MakePlan(options);
  ASSERT_TRUE(plan.ok());
  int64_t candidates = 0;
  for (const MemoryMapEntry& entry : plan->memory_map) {
    const ConfigurationExplanation explanation = Explain(options, *plan, entry.dims);
    ASSERT_TRUE(explanation.has_memory);
    EXPECT_EQ(explanation.memory.verdict, entry.verdict);
    EXPECT_FLOAT_EQ(static_cast<float>(explanation.memory.fraction_of_capacity),
                    entry.fraction_of_capacity);
    switch (entry.verdict) {
      case MemoryVerdict::kSafe:
        ASSERT_EQ(explanation.outcome, PlanOutcome::kCandidate);
        ASSERT_GE(explanation.rank, 0);
        EXPECT_EQ(plan->candidates[explanation.rank].predicted.step_time_seconds,
                  explanation.predicted.step_time_seconds);
        ++candidates;
        break;
      case MemoryVerdict::kRisky:
        EXPECT_EQ(explanation.outcome, PlanOutcome::kRisky);
        break;
      case MemoryVerdict::kOutOfMemory:
        EXPECT_EQ(explanation.outcome, PlanOutcome::kOutOfMemory);
        break;
    }
  }
  EXPECT_EQ(candidates, static_cast<int64_t>(plan->candidates.size()));
  EXPECT_EQ(Explain(options, *plan, plan->candidates[0].config.dims()).rank, 0);
}

TEST_F(PlannerExplainTest, RulesFirstThenSearchSpaceThenMemory) {
  PlanOptions options;
  options.micro_batch_sizes = {1, 2};
  absl::StatusOr<Plan> plan = MakePlan(options);
  ASSERT_TRUE(plan.ok());

  ConfigurationExplanation explanation = Explain(options, *plan, Dims(2, 1, 8, 1, 3));
  EXPECT_EQ(explanation.outcome, PlanOutcome::kRejected);
  EXPECT_EQ(explanation.rejection, Rejection::kBatchDivisibility);
  EXPECT_FALSE(explanation.has_memory);

  explanation = Explain(options, *plan, Dims(8, 2, 1, 1, 4));
  EXPECT_EQ(explanation.outcome, PlanOutcome::kOutsideSearchSpace);
  EXPECT_EQ(explanation.outside, SearchDimension::kMicroBatch);
  EXPECT_TRUE(explanation.has_memory);
  EXPECT_EQ(explanation.rank, -1);

  ParallelDims dims = Dims(8, 1, 2, 1, 1);
  dims.virtual_pipeline = 2;
  EXPECT_EQ(Explain(options, *plan, dims).outside, SearchDimension::kVirtualPipeline);
  dims = Dims(8, 2, 1, 1, 1);
  dims.recompute = Recompute::kFull;
  EXPECT_EQ(Explain(options, *plan, dims).outside, SearchDimension::kRecompute);
  dims = Dims(8, 2, 1, 1, 1);
  dims.sequence_parallel = false;
  EXPECT_EQ(Explain(options, *plan, dims).outside, SearchDimension::kSequenceParallel);

  // tp 1 with micro-batch 2 keeps 2 x 8192 tokens of all 32 layers on one GPU: 88 GB.
  explanation = Explain(options, *plan, Dims(16, 1, 1, 1, 2));
  EXPECT_EQ(explanation.outcome, PlanOutcome::kOutOfMemory);
  EXPECT_EQ(explanation.memory.verdict, MemoryVerdict::kOutOfMemory);
}

TEST_F(PlannerExplainTest, RiskyIsACandidateOnlyWhenIncluded) {
  PlanOptions options;
  absl::StatusOr<Plan> plan = MakePlan(options);
  ASSERT_TRUE(plan.ok());
  const auto risky = std::find_if(
      plan->memory_map.begin(), plan->memory_map.end(),
      [](const MemoryMapEntry& entry) { return entry.verdict == MemoryVerdict::kRisky; });
  ASSERT_NE(risky, plan->memory_map.end());
  EXPECT_EQ(Explain(options, *plan, risky->dims).outcome, PlanOutcome::kRisky);
  options.include_risky = true;
  plan = MakePlan(options);
  ASSERT_TRUE(plan.ok());
  const ConfigurationExplanation explanation = Explain(options, *plan, risky->dims);
  EXPECT_EQ(explanation.outcome, PlanOutcome::kCandidate);
  EXPECT_GE(explanation.rank, 0);
}

TEST(SearchedDimensionsTest, DefaultsAndSortedUniqueLists) {
  PlanOptions options;
  EXPECT_EQ(SearchedMicroBatchSizes(options), (std::vector<int64_t>{1, 2, 4, 8, 16}));
  EXPECT_EQ(SearchedVirtualPipelineSizes(options), (std::vector<int64_t>{1}));
  EXPECT_EQ(SearchedRecomputeModes(options), (std::vector<Recompute>{Recompute::kNone}));
  options.micro_batch_sizes = {4, 1, 4};
  options.recompute_modes = {Recompute::kFull, Recompute::kNone};
  EXPECT_EQ(SearchedMicroBatchSizes(options), (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(SearchedRecomputeModes(options),
            (std::vector<Recompute>{Recompute::kNone, Recompute::kFull}));
}

// The expert dimensions a plan enumerates: the searched lists, the count, and --explain.
class ExpertPlanningTest : public PlannerTest {
 protected:
  // Mixtral-8x7B: 8 experts; 2 nodes of 8 H100.
  ExpertPlanningTest() : moe_(*FindModelPreset("mixtral-8x7b")) {}

  ModelSpec moe_;
};

TEST_F(ExpertPlanningTest, DenseModelsAreSearchedWithTheDefaultsOnly) {
  PlanOptions options;
  EXPECT_EQ(SearchedExpertParallelSizes(model_, options), std::vector<int64_t>{1});
  EXPECT_EQ(SearchedExpertTensorParallelSizes(model_, options), std::vector<int64_t>{0});
  // 16 = 2^4 splits into (dp, tp, pp, cp) in 35 ways, times 5 micro-batch sizes: as before
  // experts existed.
  EXPECT_EQ(CountEnumeratedConfigurations(model_, training_, cluster_.world_size(), options), 175);
  absl::StatusOr<Plan> plan = MakePlan(options);
  ASSERT_TRUE(plan.ok());
  for (const MemoryMapEntry& entry : plan->memory_map) {
    EXPECT_EQ(entry.dims.ep, 1);
    EXPECT_EQ(entry.dims.etp, 0);
  }
}

TEST_F(ExpertPlanningTest, DenseModelRefusesExpertLists) {
  PlanOptions options;
  options.expert_parallel_sizes = {1};
  absl::StatusOr<Plan> plan = MakePlan(options);
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(plan.status().message(),
            "space.expert_parallel_sizes is set, but model \"llama3.1-8b\" has no experts "
            "(model.moe.num_experts is 0)");
  options.expert_parallel_sizes.clear();
  options.expert_tensor_parallel_sizes = {2};
  plan = MakePlan(options);
  EXPECT_THAT(plan.status().message(), HasSubstr("space.expert_tensor_parallel_sizes is set"));
}

TEST_F(ExpertPlanningTest, ExpertListEntriesAreInRange) {
  PlanOptions options;
  options.expert_parallel_sizes = {8, 0};
  EXPECT_EQ(CheckExpertSizeLists(moe_, options).message(),
            "space.expert_parallel_sizes[1] (0) must be in [1, 4096]");
  options.expert_parallel_sizes = {8};
  options.expert_tensor_parallel_sizes = {4097};
  EXPECT_EQ(CheckExpertSizeLists(moe_, options).message(),
            "space.expert_tensor_parallel_sizes[0] (4097) must be in [1, 4096]");
  options.expert_tensor_parallel_sizes = {1, 4096};
  EXPECT_TRUE(CheckExpertSizeLists(moe_, options).ok());
  EXPECT_FALSE(CheckExpertSizeLists(model_, options).ok());
  EXPECT_TRUE(CheckExpertSizeLists(model_, PlanOptions()).ok());
}

TEST_F(ExpertPlanningTest, MoeDefaultsAreTheDivisorsOfTheExpertsAndTp) {
  PlanOptions options;
  EXPECT_EQ(SearchedExpertParallelSizes(moe_, options), (std::vector<int64_t>{1, 2, 4, 8}));
  EXPECT_EQ(SearchedExpertTensorParallelSizes(moe_, options), std::vector<int64_t>{0});
  options.expert_parallel_sizes = {8, 2, 8};
  options.expert_tensor_parallel_sizes = {2, 1};
  EXPECT_EQ(SearchedExpertParallelSizes(moe_, options), (std::vector<int64_t>{2, 8}));
  EXPECT_EQ(SearchedExpertTensorParallelSizes(moe_, options), (std::vector<int64_t>{1, 2}));
}

TEST_F(ExpertPlanningTest, CountsExpertLayoutsThatFoldOntoEachAttentionLayout) {
  // Over the 35 (tp, cp, pp) layouts, ep in {1, 2, 4, 8} with etp = tp folds (etp x ep x pp
  // divides 16) 100 times, times 5 micro-batch sizes; e.g. tp 2, pp 2 takes ep 1, 2 and 4,
  // not 8 (2 x 8 x 2 = 32).
  PlanOptions options;
  EXPECT_EQ(CountEnumeratedConfigurations(moe_, training_, cluster_.world_size(), options), 500);
  // ep {2, 8} x etp {1, 2}: 105 foldings.
  options.expert_parallel_sizes = {2, 8};
  options.expert_tensor_parallel_sizes = {1, 2};
  EXPECT_EQ(CountEnumeratedConfigurations(moe_, training_, cluster_.world_size(), options), 525);
  // The plan enumerates exactly those, and every configuration it keeps folds.
  absl::StatusOr<Plan> plan = PlanConfigurations(moe_, training_, cluster_, options, params_);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->counts.enumerated, 525);
  EXPECT_GT(plan->counts.valid, 0);
  for (const MemoryMapEntry& entry : plan->memory_map) {
    const int64_t etp = entry.dims.etp == 0 ? entry.dims.tp : entry.dims.etp;
    EXPECT_EQ(cluster_.world_size() % (etp * entry.dims.ep * entry.dims.pp), 0);
    EXPECT_EQ(moe_.moe().num_experts % entry.dims.ep, 0);
  }
}

TEST_F(ExpertPlanningTest, ExplainNamesTheExpertRuleOrTheSearchedSizes) {
  PlanOptions options;
  const Plan plan;  // explained against no plan: the rules and the space alone
  ParallelDims dims = MakeParallelDims(16, 1, 1, 1, 1);
  dims.ep = 3;
  ConfigurationExplanation explanation =
      ExplainConfiguration(moe_, training_, cluster_, options, params_, plan, dims);
  EXPECT_EQ(explanation.outcome, PlanOutcome::kRejected);
  EXPECT_EQ(explanation.rejection, Rejection::kExpertParallelExperts);

  options.expert_parallel_sizes = {8};
  dims.ep = 4;
  explanation = ExplainConfiguration(moe_, training_, cluster_, options, params_, plan, dims);
  EXPECT_EQ(explanation.outcome, PlanOutcome::kOutsideSearchSpace);
  EXPECT_EQ(explanation.outside, SearchDimension::kExpertParallel);

  // etp 2 with tp 1: the default list searches tp's size only.
  options.expert_parallel_sizes.clear();
  dims.ep = 8;
  dims.etp = 2;
  explanation = ExplainConfiguration(moe_, training_, cluster_, options, params_, plan, dims);
  EXPECT_EQ(explanation.outcome, PlanOutcome::kOutsideSearchSpace);
  EXPECT_EQ(explanation.outside, SearchDimension::kExpertTensorParallel);
  // A list naming 2 searches it; 0 (unset) and tp's size are the same size.
  options.expert_tensor_parallel_sizes = {2};
  explanation = ExplainConfiguration(moe_, training_, cluster_, options, params_, plan, dims);
  EXPECT_NE(explanation.outcome, PlanOutcome::kOutsideSearchSpace);
  options.expert_tensor_parallel_sizes.clear();
  dims.etp = 1;
  explanation = ExplainConfiguration(moe_, training_, cluster_, options, params_, plan, dims);
  EXPECT_NE(explanation.outcome, PlanOutcome::kOutsideSearchSpace);
}

}  // namespace
}  // namespace paratune
