// What a search of a plan's candidates is projected to cost (docs/short_probes.md): the
// options a search spec runs with, the estimator's projection for them, and its API message.
// Shared by the Plan answers (convert/estimate_requests.h) and the CLI's text.
#ifndef PARATUNE_CONVERT_COST_PROJECTION_H_
#define PARATUNE_CONVERT_COST_PROJECTION_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "estimator/planner.h"
#include "estimator/search_cost.h"
#include "estimator/training_spec.h"
#include "proto/autotuner_service.pb.h"
#include "proto/search.pb.h"

namespace paratune {

// The options a search of `spec` runs with: its probe steps (ProbeStepsOf), top_k and
// adaptive settings, each unset (0) field as the server's default (convert/search_request.h).
SearchCostOptions SearchCostOptionsFromSpec(const v1::SearchSpec& spec);

// The projection for `spec` of `plan`'s candidates, training `training` on `gpus` GPUs.
// INVALID_ARGUMENT naming the setting and its value ("projected cost: tolerance (-1) must be
// in (0, 1]") when one is out of range for a projection.
absl::StatusOr<SearchCostProjection> ProjectPlanCost(const Plan& plan, const TrainingSpec& training,
                                                     int64_t gpus, const v1::SearchSpec& spec);

v1::ProjectedCost ProjectedCostToProto(const SearchCostProjection& projection);

}  // namespace paratune

#endif  // PARATUNE_CONVERT_COST_PROJECTION_H_
