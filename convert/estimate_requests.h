// The Estimate and Plan requests of the Autotuner API, answered with the estimator alone.
// Shared by the server's RPCs and the CLI's offline `estimate` and `plan` commands, so both
// give the same answer for the same request.
#ifndef PARATUNE_CONVERT_ESTIMATE_REQUESTS_H_
#define PARATUNE_CONVERT_ESTIMATE_REQUESTS_H_

#include "absl/status/statusor.h"
#include "convert/spec_convert.h"
#include "estimator/performance_parameters.h"
#include "estimator/planner.h"
#include "proto/autotuner_service.pb.h"

namespace paratune {

// Memory and performance of request.config. A field error (estimator/field_error.h) naming
// the field from the request down when the model, training run, cluster or configuration is
// invalid.
absl::StatusOr<v1::EstimateResponse> AnswerEstimate(const v1::EstimateRequest& request);

// Counts, rejections and the memory-safe candidates of request.spec in predicted order, the
// projected cost of searching them with its settings (cost_projection.h), and the memory
// map of every valid configuration (memory_map.h). Unset recompute modes search selective and
// full too when nothing fits without (default_recompute.h); a plan without candidates says
// what changes give some (plan_advice.h).
// A field error naming the field from the request down ("spec.model.preset", "limit") when
// the spec is invalid or limit < 0; INVALID_ARGUMENT naming the setting when one is out of
// range for the projection.
absl::StatusOr<v1::PlanResponse> AnswerPlan(const v1::PlanRequest& request);

// AnswerPlan's response with what it was made from, for callers that show more of the plan
// than PlanResponse holds (the CLI's --explain). Same errors as AnswerPlan.
struct DetailedPlan {
  // The spec as planned: its plan options with the recompute modes the plan searched.
  ResolvedSpec spec;
  PerformanceParameters params;
  Plan plan;
  v1::PlanResponse response;
};
absl::StatusOr<DetailedPlan> AnswerPlanInDetail(const v1::PlanRequest& request);

}  // namespace paratune

#endif  // PARATUNE_CONVERT_ESTIMATE_REQUESTS_H_
