// Search policies that pick candidates before probing starts (DESIGN.md §6).
#ifndef PARATUNE_SERVER_CORE_CANDIDATE_SELECTION_H_
#define PARATUNE_SERVER_CORE_CANDIDATE_SELECTION_H_

#include <cstddef>
#include <vector>

#include "estimator/planner.h"
#include "proto/search.pb.h"

namespace paratune {

// Indices into plan.candidates of the configurations to probe, in predicted order.
// Eligible are SAFE candidates, and RISKY ones unless spec.space.memory_policy is SAFE_ONLY.
// TOP_K: the first spec.top_k eligible; EXHAUSTIVE: every eligible one. `spec` must be
// normalized (ValidateCreateSearchRequest): any other policy selects nothing.
std::vector<size_t> SelectCandidates(const v1::SearchSpec& spec, const Plan& plan);

}  // namespace paratune

#endif  // PARATUNE_SERVER_CORE_CANDIDATE_SELECTION_H_
