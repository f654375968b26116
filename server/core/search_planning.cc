#include "server/core/search_planning.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "convert/estimate_convert.h"
#include "convert/search_text.h"
#include "convert/spec_convert.h"
#include "estimator/default_recompute.h"
#include "estimator/performance_model.h"
#include "estimator/plan_advice.h"
#include "server/core/adaptive_policy.h"
#include "server/core/candidate_selection.h"
#include "server/core/static_policy.h"

namespace paratune {

absl::StatusOr<PlannedSearch> PlanSearch(const v1::SearchSpec& spec) {
  PT_ASSIGN_OR_RETURN(ResolvedSpec resolved, ResolveSearchSpec(spec));
  const PerformanceParameters calibrated = DefaultPerformanceParameters(resolved.cluster.gpu());
  PT_ASSIGN_OR_RETURN(DefaultRecomputePlan defaulted,
                      PlanWithDefaultRecompute(resolved.model, resolved.training, resolved.cluster,
                                               resolved.plan_options, calibrated));
  resolved.plan_options = std::move(defaulted.options);
  Plan plan = std::move(defaulted.plan);
  PlannedSearch planned{resolved, plan.counts, nullptr, defaulted.recompute_added, {}};
  if (plan.candidates.empty()) {
    for (const PlanAdvice& advice :
         AdvisePlan({resolved.model, resolved.training, resolved.cluster, resolved.plan_options})) {
      planned.advice.push_back(PlanAdviceToProto(advice));
    }
  }
  if (spec.policy() == v1::ADAPTIVE) {
    AdaptiveOptions options;
    options.tolerance = spec.adaptive().tolerance();
    options.confidence_sigmas = spec.adaptive().confidence_sigmas();
    options.max_in_flight = spec.adaptive().max_in_flight();
    options.max_confirmations = spec.adaptive().max_confirmations();
    planned.policy =
        std::make_unique<AdaptivePolicy>(resolved.model, resolved.training, resolved.cluster,
                                         std::move(plan.candidates), calibrated, options);
  } else {
    std::vector<size_t> selected = SelectCandidates(spec, plan);
    planned.policy =
        std::make_unique<StaticPolicy>(std::move(plan.candidates), std::move(selected));
  }
  return planned;
}

absl::StatusOr<RestoredPolicy> RestorePolicy(const v1::Search& search) {
  PT_ASSIGN_OR_RETURN(PlannedSearch planned, PlanSearch(search.spec()));
  RestoredPolicy restored{std::move(planned.resolved), std::move(planned.policy), {}};
  SearchPolicy& policy = *restored.policy;
  const std::vector<PlannedConfig>& candidates = policy.candidates();
  using Kind = SearchPolicy::ProbeKind;
  for (const v1::Candidate& candidate : search.candidates()) {
    const std::string config = candidate.config().SerializeAsString();
    const auto found =
        std::find_if(candidates.begin(), candidates.end(), [&](const PlannedConfig& p) {
          return ParallelConfigToProto(p.config).SerializeAsString() == config;
        });
    if (found == candidates.end()) {
      return absl::FailedPreconditionError(
          absl::StrCat(candidate.name(), " (", DescribeConfig(candidate.config()),
                       ") is not among this server's planned candidates; the search cannot "
                       "resume"));
    }
    const size_t index = found - candidates.begin();
    restored.policy_index.push_back(index);
    const bool confirmation = candidate.has_screening_result();
    if (confirmation) {
      PT_RETURN_IF_ERROR(policy.Record(index, Kind::kScreening, candidate.screening_result()));
    }
    const Kind kind = confirmation ? Kind::kConfirmation : Kind::kScreening;
    if (candidate.state() == v1::CANDIDATE_PROBED) {
      PT_RETURN_IF_ERROR(policy.Record(index, kind, candidate.probe_result()));
    } else if (candidate.state() == v1::CANDIDATE_QUEUED ||
               candidate.state() == v1::CANDIDATE_RUNNING) {
      policy.MarkInFlight(index, kind);
    }
  }
  return restored;
}

v1::Candidate CandidateFromPlan(const PlannedConfig& planned, std::string name,
                                double safe_fraction) {
  v1::Candidate candidate;
  candidate.set_name(std::move(name));
  *candidate.mutable_config() = ParallelConfigToProto(planned.config);
  *candidate.mutable_memory() =
      MemoryEstimateToProto(planned.memory, planned.config, safe_fraction);
  *candidate.mutable_predicted() = PerformanceEstimateToProto(planned.predicted);
  candidate.set_state(v1::CANDIDATE_QUEUED);
  return candidate;
}

}  // namespace paratune
