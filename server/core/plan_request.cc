#include "server/core/plan_request.h"

#include "common/status_macros.h"
#include "convert/estimate_requests.h"
#include "convert/spec_convert.h"
#include "estimator/planner.h"

namespace paratune {

absl::StatusOr<v1::PlanResponse> AnswerPlanWithinLimits(const v1::PlanRequest& request,
                                                        const Limits& limits) {
  PT_RETURN_IF_ERROR(CheckRequestBytes("Plan", request.ByteSizeLong(), limits.max_request_bytes));
  if (limits.max_enumerated_candidates > 0) {
    // A spec that does not resolve gets AnswerPlan's error naming the field.
    if (absl::StatusOr<ResolvedSpec> spec = ResolveSearchSpec(request.spec()); spec.ok()) {
      const int64_t enumerated =
          CountEnumeratedConfigurations(spec->cluster.world_size(), spec->plan_options);
      if (enumerated > limits.max_enumerated_candidates) {
        return TooManyCandidatesError(enumerated, limits.max_enumerated_candidates);
      }
    }
  }
  return AnswerPlan(request);
}

}  // namespace paratune
