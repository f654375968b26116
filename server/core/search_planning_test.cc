#include "server/core/search_planning.h"

#include "convert/search_request.h"
#include "gtest/gtest.h"
#include "server/core/test_requests.h"

namespace paratune {
namespace {

v1::SearchSpec Normalized(v1::CreateSearchRequest request) {
  absl::StatusOr<ValidatedSearchRequest> validated = ValidateCreateSearchRequest(request);
  EXPECT_TRUE(validated.ok()) << validated.status();
  return validated->spec;
}

TEST(PlanSearchTest, TopKPicksItsCandidatesAtOnceThenNothing) {
  absl::StatusOr<PlannedSearch> planned = PlanSearch(Normalized(SmallSimSearch(3)));
  ASSERT_TRUE(planned.ok()) << planned.status();
  EXPECT_GT(planned->counts.valid, 3);
  const SearchPolicy::Decision first = planned->policy->Next();
  ASSERT_EQ(first.picks.size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(first.picks[i].candidate, i);
  EXPECT_FALSE(first.stop_reason.has_value());
  EXPECT_TRUE(planned->policy->Next().picks.empty());
}

TEST(PlanSearchTest, AdaptivePicksAFewAtATime) {
  v1::CreateSearchRequest request = SmallSimSearch(3);
  request.mutable_spec()->set_policy(v1::ADAPTIVE);
  absl::StatusOr<PlannedSearch> planned = PlanSearch(Normalized(request));
  ASSERT_TRUE(planned.ok()) << planned.status();
  EXPECT_EQ(planned->policy->Next().picks.size(), 2u);  // max_in_flight's default
}

TEST(RestorePolicyTest, StoredCandidatesAreNotPickedAgain) {
  const v1::SearchSpec spec = Normalized(SmallSimSearch(3));
  absl::StatusOr<PlannedSearch> planned = PlanSearch(spec);
  ASSERT_TRUE(planned.ok());
  v1::Search search;
  *search.mutable_spec() = spec;
  const SearchPolicy::Decision first = planned->policy->Next();
  // Two of the three were stored before the server stopped: one probed, one queued.
  for (size_t i = 0; i < 2; ++i) {
    *search.add_candidates() = CandidateFromPlan(
        planned->policy->candidates()[first.picks[i].candidate], "searches/1/candidates/0", 0.8);
  }
  search.mutable_candidates(0)->set_state(v1::CANDIDATE_PROBED);
  search.mutable_candidates(0)->mutable_probe_result()->set_outcome(v1::PROBE_OK);
  absl::StatusOr<RestoredPolicy> restored = RestorePolicy(search);
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_EQ(restored->policy_index, (std::vector<size_t>{0, 1}));
  const SearchPolicy::Decision next = restored->policy->Next();
  ASSERT_EQ(next.picks.size(), 1u);
  EXPECT_EQ(next.picks[0].candidate, 2u);
}

TEST(RestorePolicyTest, ACandidateThisBuildDoesNotPlanIsFailedPrecondition) {
  v1::Search search;
  *search.mutable_spec() = Normalized(SmallSimSearch(3));
  v1::Candidate& candidate = *search.add_candidates();
  candidate.set_name("searches/1/candidates/0");
  candidate.mutable_config()->set_data_parallel(3);
  candidate.mutable_config()->set_tensor_parallel(1);
  candidate.mutable_config()->set_pipeline_parallel(1);
  candidate.mutable_config()->set_context_parallel(1);
  EXPECT_EQ(RestorePolicy(search).status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace paratune
