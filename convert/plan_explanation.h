// Why one configuration is or is not among a plan's candidates: `paratune plan --explain` and
// the web console's planner (POST /api/explain) give the same answer for the same request.
#ifndef PARATUNE_CONVERT_PLAN_EXPLANATION_H_
#define PARATUNE_CONVERT_PLAN_EXPLANATION_H_

#include "absl/status/statusor.h"
#include "proto/autotuner_service.pb.h"

namespace paratune {

// The plan of request.plan (AnswerPlanInDetail, convert/estimate_requests.h) and what it made
// of request.config: the outcome; the reason, in words that name the rule broken (with the
// fields and values), the dimension not searched and the flag that searches it, or the memory
// figures ("a candidate: #3 of 41 in predicted order, 402.1 TFLOP/s per GPU predicted", with
// "; beyond the N the plan table shows (--limit)" past request.plan.limit); the rank; and,
// when the rules hold, the configuration's memory and predicted step. AnswerPlanInDetail's errors;
// INVALID_ARGUMENT for an unknown recompute mode of the configuration.
absl::StatusOr<v1::ExplainResponse> AnswerExplain(const v1::ExplainRequest& request);

}  // namespace paratune

#endif  // PARATUNE_CONVERT_PLAN_EXPLANATION_H_
