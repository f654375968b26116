// From a validated spec to the search's policy, in one place (DESIGN.md §6): a new search is
// planned once (enumerate, check, prune by memory, order by predicted throughput) and gets
// the policy its spec names; a search resumed after a restart is planned again and its
// stored candidates replayed into a new policy, so it continues as if the server had not
// stopped.
#ifndef PARATUNE_SERVER_CORE_SEARCH_PLANNING_H_
#define PARATUNE_SERVER_CORE_SEARCH_PLANNING_H_

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "convert/spec_convert.h"
#include "estimator/planner.h"
#include "proto/autotuner_service.pb.h"
#include "proto/search.pb.h"
#include "server/core/search_policy.h"

namespace paratune {

struct PlannedSearch {
  // The spec's model, training run, cluster and plan options (with the recompute modes
  // planned).
  ResolvedSpec resolved;
  PlanCounts counts;
  std::unique_ptr<SearchPolicy> policy;
  // The spec named no recompute modes and nothing fitted without recompute: the plan searched
  // none, selective and full (estimator/default_recompute.h).
  bool recompute_added = false;
  // When the plan has no candidate, the changes that give some (estimator/plan_advice.h).
  std::vector<v1::PlanAdvice> advice;
};

// Plans `spec` (normalized: ValidateCreateSearchRequest), with recompute added by default
// where nothing fits without (PlanWithDefaultRecompute), and builds its policy: TOP_K and
// EXHAUSTIVE a StaticPolicy of the selected candidates, ADAPTIVE an AdaptivePolicy over every
// candidate. policy->candidates() is empty when nothing can be probed. Pure; it may take a
// noticeable fraction of a second for the largest clusters. The planner's errors.
absl::StatusOr<PlannedSearch> PlanSearch(const v1::SearchSpec& spec);

struct RestoredPolicy {
  ResolvedSpec resolved;
  std::unique_ptr<SearchPolicy> policy;
  // For candidate n of the search, its index among policy->candidates().
  std::vector<size_t> policy_index;
};

// The policy of stored `search`, with its probed candidates recorded and its queued and
// running ones in flight. FAILED_PRECONDITION when a candidate is not among this build's
// planned candidates (the estimator changed); the planner's errors.
absl::StatusOr<RestoredPolicy> RestorePolicy(const v1::Search& search);

// Candidate `name` of a search, queued, from its planned configuration; memory verdicts
// against `safe_fraction` of capacity.
v1::Candidate CandidateFromPlan(const PlannedConfig& planned, std::string name,
                                double safe_fraction);

}  // namespace paratune

#endif  // PARATUNE_SERVER_CORE_SEARCH_PLANNING_H_
