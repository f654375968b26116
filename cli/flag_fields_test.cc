#include "cli/flag_fields.h"

#include <string>
#include <utility>
#include <vector>

#include "estimator/field_error.h"
#include "gtest/gtest.h"
#include "proto/autotuner_service.pb.h"

namespace paratune {
namespace {

constexpr FlagChoice kPrecisionChoices[] = {{"false", v1::BF16}, {"true", v1::FP8}};
constexpr FlagChoice kPolicyChoices[] = {{"adaptive", v1::ADAPTIVE}, {"top_k", v1::TOP_K}};
constexpr FlagChoice kMemoryChoices[] = {{"safe_only", v1::SAFE_ONLY}};
constexpr FlagChoice kRecomputeChoices[] = {{"none", v1::RECOMPUTE_NONE},
                                            {"full", v1::RECOMPUTE_FULL}};

constexpr Flag kNodes = {"nodes", FlagType::kInt, "1", ""};
constexpr Flag kHours = {"hours", FlagType::kDouble, "0", ""};
constexpr Flag kDeadline = {"deadline", FlagType::kDuration, "0", ""};
constexpr Flag kFp8 = {"fp8", FlagType::kBool, "false", "", kPrecisionChoices};
constexpr Flag kTied = {"tied", FlagType::kBool, "false", ""};
constexpr Flag kPolicy = {"policy", FlagType::kString, "adaptive", "", kPolicyChoices};
constexpr Flag kMemory = {"memory", FlagType::kString, "", "", kMemoryChoices};
constexpr Flag kSizes = {"sizes", FlagType::kIntList, "", ""};
constexpr Flag kModes = {"modes", FlagType::kStringList, "", "", kRecomputeChoices};
constexpr Flag kSeed = {"seed", FlagType::kUint, "1", ""};
constexpr Flag kName = {"name", FlagType::kString, "", ""};
constexpr Flag kWatch = {"watch", FlagType::kBool, "false", ""};
constexpr Flag kLimit = {"limit", FlagType::kInt, "20", ""};

// Below SearchSpec.
constexpr FlagField kSpecFields[] = {
    {&kNodes, "cluster.num_nodes"},
    {&kHours, "budget.max_gpu_seconds", 3600, "GPU-seconds"},
    {&kDeadline, "budget.deadline_seconds", 1, "seconds"},
    {&kFp8, "training.precision"},
    {&kTied, "model.tied_embeddings"},
    {&kPolicy, "policy"},
    {&kMemory, "space.memory_policy"},
    {&kSizes, "space.micro_batch_sizes"},
    {&kModes, "space.recompute_modes"},
    {&kSeed, "seed"},
};
constexpr FlagField kRequestFields[] = {{&kName, "display_name"}, {&kWatch}};
constexpr FlagField kPlanFields[] = {{&kLimit, "limit"}};
constexpr FlagGroup kGroups[] = {
    {"Spec", &v1::CreateSearchRequest::descriptor, "spec.", kSpecFields},
    {"Search", &v1::CreateSearchRequest::descriptor, "", kRequestFields},
    {"Plan", &v1::PlanRequest::descriptor, "", kPlanFields},
};

FlagValues Values(std::vector<std::pair<const Flag*, std::string>> given) {
  std::vector<const Flag*> taken;
  for (const FlagGroup& group : kGroups) {
    for (const FlagField& binding : group.flags) taken.push_back(binding.flag);
  }
  absl::StatusOr<FlagValues> values =
      FlagValues::Create(taken, given, [](const char*) { return nullptr; });
  EXPECT_TRUE(values.ok()) << values.status();
  return *std::move(values);
}

TEST(SetFlagFieldsTest, SetsEachFieldInItsTypeAndUnits) {
  v1::CreateSearchRequest request;
  ASSERT_TRUE(SetFlagFields(kGroups,
                            Values({{&kNodes, "4"},
                                    {&kHours, "2"},
                                    {&kDeadline, "90m"},
                                    {&kFp8, "true"},
                                    {&kTied, "true"},
                                    {&kPolicy, "TOP_K"},
                                    {&kSizes, "1,2"},
                                    {&kModes, "none,full"},
                                    {&kSeed, "7"},
                                    {&kName, "demo"},
                                    {&kWatch, "true"}}),
                            request)
                  .ok());
  const v1::SearchSpec& spec = request.spec();
  EXPECT_EQ(spec.cluster().num_nodes(), 4);
  EXPECT_DOUBLE_EQ(spec.budget().max_gpu_seconds(), 7200);
  EXPECT_DOUBLE_EQ(spec.budget().deadline_seconds(), 5400);
  EXPECT_EQ(spec.training().precision(), v1::FP8);
  EXPECT_TRUE(spec.model().tied_embeddings());
  EXPECT_EQ(spec.policy(), v1::TOP_K);
  ASSERT_EQ(spec.space().micro_batch_sizes_size(), 2);
  EXPECT_EQ(spec.space().micro_batch_sizes(1), 2);
  ASSERT_EQ(spec.space().recompute_modes_size(), 2);
  EXPECT_EQ(spec.space().recompute_modes(1), v1::RECOMPUTE_FULL);
  EXPECT_EQ(spec.seed(), 7u);
  EXPECT_EQ(request.display_name(), "demo");
}

TEST(SetFlagFieldsTest, DefaultsAreSetTooAndAnEmptyChoiceLeavesItsFieldUnset) {
  v1::CreateSearchRequest request;
  ASSERT_TRUE(SetFlagFields(kGroups, Values({}), request).ok());
  EXPECT_EQ(request.spec().training().precision(), v1::BF16);
  EXPECT_EQ(request.spec().policy(), v1::ADAPTIVE);
  EXPECT_EQ(request.spec().seed(), 1u);
  EXPECT_EQ(request.spec().space().memory_policy(), v1::MEMORY_POLICY_UNSPECIFIED);
}

TEST(SetFlagFieldsTest, OnlyTheGroupsOfTheMessageGiven) {
  v1::PlanRequest plan;
  ASSERT_TRUE(SetFlagFields(kGroups, Values({{&kLimit, "3"}, {&kNodes, "4"}}), plan).ok());
  EXPECT_EQ(plan.limit(), 3);
  EXPECT_FALSE(plan.has_spec());
}

TEST(SetFlagFieldsTest, ATableFaultIsInternal) {
  constexpr FlagField kNoSuchField[] = {{&kNodes, "cluster.nodes"}};
  constexpr FlagField kWrongType[] = {{&kName, "cluster.num_nodes"}};
  constexpr FlagField kThroughAScalar[] = {{&kNodes, "seed.nodes"}};
  for (const absl::Span<const FlagField> fields :
       {absl::Span<const FlagField>(kNoSuchField), absl::Span<const FlagField>(kWrongType),
        absl::Span<const FlagField>(kThroughAScalar)}) {
    const FlagGroup groups[] = {{"Spec", &v1::CreateSearchRequest::descriptor, "spec.", fields}};
    v1::CreateSearchRequest request;
    EXPECT_EQ(SetFlagFields(groups, Values({}), request).code(), absl::StatusCode::kInternal);
  }
}

TEST(InFlagWordsTest, AFieldErrorNamesTheFlagThatSetTheField) {
  EXPECT_EQ(InFlagWords(FieldError("spec.cluster.num_nodes", "(0) must be in [1, 65536]"), kGroups),
            absl::InvalidArgumentError("--nodes (0) must be in [1, 65536]"));
  EXPECT_EQ(
      InFlagWords(FieldError("display_name", "(300 bytes) must be at most 256 bytes"), kGroups),
      absl::InvalidArgumentError("--name (300 bytes) must be at most 256 bytes"));
}

TEST(InFlagWordsTest, KeepsAnEntrysIndexAndSaysWhereTheUnitsDiffer) {
  EXPECT_EQ(InFlagWords(FieldError("spec.space.micro_batch_sizes[1]", "(0) must be in [1, 1024]"),
                        kGroups),
            absl::InvalidArgumentError("--sizes[1] (0) must be in [1, 1024]"));
  EXPECT_EQ(
      InFlagWords(FieldError("spec.budget.max_gpu_seconds", "(3.6e+15) must be in [0, 1e+12]"),
                  kGroups),
      absl::InvalidArgumentError("--hours, in GPU-seconds, (3.6e+15) must be in [0, 1e+12]"));
}

TEST(InFlagWordsTest, LeavesEveryOtherStatusAlone) {
  const absl::Status unbound = FieldError("spec.model.preset", "(\"x\") is not a known model");
  EXPECT_EQ(InFlagWords(unbound, kGroups), unbound);
  // The field's words in a message that is no field error stay words.
  const absl::Status text = absl::InvalidArgumentError("spec.cluster.num_nodes (0) is wrong");
  EXPECT_EQ(InFlagWords(text, kGroups), text);
  const absl::Status unavailable = absl::UnavailableError("no server");
  EXPECT_EQ(InFlagWords(unavailable, kGroups), unavailable);
  EXPECT_TRUE(InFlagWords(absl::OkStatus(), kGroups).ok());
}

}  // namespace
}  // namespace paratune
