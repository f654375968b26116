#include "server/core/plan_request.h"

#include <cstddef>
#include <cstdint>

#include "common/status_macros.h"
#include "convert/estimate_requests.h"
#include "convert/plan_explanation.h"
#include "convert/spec_convert.h"
#include "estimator/planner.h"

namespace paratune {
namespace {

// The caps of `limits` on a plan of `spec` and on `request_bytes`, the size of the request of
// `method` that asks for it.
absl::Status CheckPlanWithinLimits(const char* method, const v1::SearchSpec& spec,
                                   size_t request_bytes, const Limits& limits) {
  PT_RETURN_IF_ERROR(CheckRequestBytes(method, request_bytes, limits.max_request_bytes));
  if (limits.max_enumerated_candidates > 0) {
    // A spec that does not resolve gets AnswerPlan's error naming the field.
    if (absl::StatusOr<ResolvedSpec> resolved = ResolveSearchSpec(spec); resolved.ok()) {
      const int64_t enumerated =
          CountEnumeratedConfigurations(resolved->model, resolved->training,
                                        resolved->cluster.world_size(), resolved->plan_options);
      if (enumerated > limits.max_enumerated_candidates) {
        return TooManyCandidatesError(enumerated, limits.max_enumerated_candidates);
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<v1::PlanResponse> AnswerPlanWithinLimits(const v1::PlanRequest& request,
                                                        const Limits& limits) {
  PT_RETURN_IF_ERROR(CheckPlanWithinLimits("Plan", request.spec(), request.ByteSizeLong(), limits));
  return AnswerPlan(request);
}

absl::StatusOr<v1::ExplainResponse> AnswerExplainWithinLimits(const v1::ExplainRequest& request,
                                                              const Limits& limits) {
  PT_RETURN_IF_ERROR(
      CheckPlanWithinLimits("Explain", request.plan().spec(), request.ByteSizeLong(), limits));
  return AnswerExplain(request);
}

}  // namespace paratune
