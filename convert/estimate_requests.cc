#include "convert/estimate_requests.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "convert/cost_projection.h"
#include "convert/estimate_convert.h"
#include "convert/memory_map.h"
#include "convert/search_request.h"
#include "convert/spec_convert.h"
#include "estimator/default_recompute.h"
#include "estimator/field_error.h"
#include "estimator/memory_model.h"
#include "estimator/performance_model.h"
#include "estimator/plan_advice.h"
#include "estimator/planner.h"

namespace paratune {

absl::StatusOr<v1::EstimateResponse> AnswerEstimate(const v1::EstimateRequest& request) {
  PT_ASSIGN_OR_RETURN(ModelSpec model, ModelSpecFromProto(request.model()));
  PT_ASSIGN_OR_RETURN(TrainingSpec training, TrainingSpecFromProto(request.training()));
  PT_ASSIGN_OR_RETURN(ClusterSpec cluster, ClusterSpecFromProto(request.cluster()));
  PT_RETURN_IF_ERROR(CheckTrainingRunsOnGpu(training, cluster));
  // An explicit configuration is estimated even when it crosses nodes with tp x cp or splits
  // the layers unevenly: those rules only keep the planner's search space small.
  PlacementRules rules;
  rules.allow_tp_cp_across_nodes = true;
  rules.allow_uneven_pipeline = true;
  PT_ASSIGN_OR_RETURN(ParallelConfig config,
                      ParallelConfigFromProto(request.config(), model, training, cluster, rules));
  MemoryOptions memory_options;
  if (request.safe_memory_fraction() != 0) {
    if (!(request.safe_memory_fraction() > 0 && request.safe_memory_fraction() <= 1)) {
      return FieldError("safe_memory_fraction",
                        absl::StrCat("(", request.safe_memory_fraction(), ") must be in (0, 1]"));
    }
    memory_options.safe_fraction = request.safe_memory_fraction();
  }
  v1::EstimateResponse response;
  *response.mutable_memory() =
      MemoryEstimateToProto(EstimateMemory(model, training, cluster, config, memory_options),
                            config, memory_options.safe_fraction);
  *response.mutable_performance() = PerformanceEstimateToProto(PredictPerformance(
      model, training, cluster, config, DefaultPerformanceParameters(cluster.gpu())));
  return response;
}

absl::StatusOr<v1::PlanResponse> AnswerPlan(const v1::PlanRequest& request) {
  PT_ASSIGN_OR_RETURN(DetailedPlan detailed, AnswerPlanInDetail(request));
  return std::move(detailed.response);
}

absl::StatusOr<DetailedPlan> AnswerPlanInDetail(const v1::PlanRequest& request) {
  if (request.limit() < 0) {
    return FieldError("limit", absl::StrCat("(", request.limit(), ") must be >= 0"));
  }
  // The spec is checked as CreateSearch checks it, so that a plan is refused where the search
  // would be (its probe settings feed the projected cost).
  v1::CreateSearchRequest create;
  *create.mutable_spec() = request.spec();
  PT_ASSIGN_OR_RETURN(ValidatedSearchRequest validated, ValidateCreateSearchRequest(create));
  ResolvedSpec spec = std::move(validated.resolved);
  const PerformanceParameters params = DefaultPerformanceParameters(spec.cluster.gpu());
  PT_ASSIGN_OR_RETURN(
      DefaultRecomputePlan planned,
      PlanWithDefaultRecompute(spec.model, spec.training, spec.cluster, spec.plan_options, params));
  // Advice is for the request as made: nothing fitted when recompute had to be added.
  std::vector<PlanAdvice> advice;
  if (planned.plan.candidates.empty() || planned.recompute_added) {
    advice = AdvisePlan({spec.model, spec.training, spec.cluster, spec.plan_options});
  }
  spec.plan_options = std::move(planned.options);
  Plan plan = std::move(planned.plan);
  v1::PlanResponse response = PlanToProto(plan, spec.plan_options, request.limit());
  response.set_recompute_added(planned.recompute_added);
  for (const PlanAdvice& change : advice) *response.add_advice() = PlanAdviceToProto(change);
  *response.mutable_memory_map() =
      MemoryMapToProto(plan, spec.plan_options, spec.cluster.gpu().memory_bytes, request.limit());
  PT_ASSIGN_OR_RETURN(
      const SearchCostProjection cost,
      ProjectPlanCost(plan, spec.training, spec.cluster.world_size(), request.spec()));
  *response.mutable_cost() = ProjectedCostToProto(cost);
  return DetailedPlan{std::move(spec), params, std::move(plan), std::move(response)};
}

}  // namespace paratune
