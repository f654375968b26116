// The Plan request as the server answers it, over gRPC (Autotuner.Plan) and in the web console
// alike, and the console's explanation of one configuration of a plan: the server's caps on
// request size and enumerated configurations, then the plan.
#ifndef PARATUNE_SERVER_CORE_PLAN_REQUEST_H_
#define PARATUNE_SERVER_CORE_PLAN_REQUEST_H_

#include "absl/status/statusor.h"
#include "proto/autotuner_service.pb.h"
#include "server/core/limits.h"

namespace paratune {

// AnswerPlan (convert/estimate_requests.h) within `limits`: INVALID_ARGUMENT from
// CheckRequestBytes for a request over max_request_bytes, TooManyCandidatesError for a spec
// that enumerates more than max_enumerated_candidates configurations, and AnswerPlan's
// errors (naming the field) otherwise.
absl::StatusOr<v1::PlanResponse> AnswerPlanWithinLimits(const v1::PlanRequest& request,
                                                        const Limits& limits);

// AnswerExplain (convert/plan_explanation.h) of request.plan within `limits`, with
// AnswerPlanWithinLimits' errors and AnswerExplain's.
absl::StatusOr<v1::ExplainResponse> AnswerExplainWithinLimits(const v1::ExplainRequest& request,
                                                              const Limits& limits);

}  // namespace paratune

#endif  // PARATUNE_SERVER_CORE_PLAN_REQUEST_H_
