#include "convert/cost_projection.h"

#include "absl/strings/str_cat.h"
#include "convert/search_request.h"

namespace paratune {
namespace {

v1::RunsCost RunsCostToProto(const RunSetCost& cost) {
  v1::RunsCost proto;
  proto.set_runs(cost.runs);
  proto.set_total_seconds(cost.total_seconds);
  proto.set_longest_seconds(cost.longest_seconds);
  return proto;
}

}  // namespace

SearchCostOptions SearchCostOptionsFromSpec(const v1::SearchSpec& spec) {
  // Each field as the server would run it: the spec's value, else the server's default.
  const auto or_default = [](auto value, auto fallback) {
    return value != 0 ? value : static_cast<decltype(value)>(fallback);
  };
  SearchCostOptions options;
  options.steps = ProbeStepsOf(spec.probe());
  options.top_k = or_default(spec.top_k(), kDefaultTopK);
  const v1::AdaptiveSettings& adaptive = spec.adaptive();
  options.tolerance = or_default(adaptive.tolerance(), kDefaultTolerance);
  options.confidence_sigmas = or_default(adaptive.confidence_sigmas(), kDefaultConfidenceSigmas);
  options.max_in_flight = or_default(adaptive.max_in_flight(), kDefaultMaxInFlight);
  options.max_confirmations =
      adaptive.has_max_confirmations() ? adaptive.max_confirmations() : kDefaultMaxConfirmations;
  options.confirmation_steps_factor =
      or_default(adaptive.confirmation_steps_factor(), kDefaultConfirmationStepsFactor);
  return options;
}

absl::StatusOr<SearchCostProjection> ProjectPlanCost(const Plan& plan, const TrainingSpec& training,
                                                     int64_t gpus, const v1::SearchSpec& spec) {
  absl::StatusOr<SearchCostProjection> projection =
      ProjectSearchCost(CostCandidates(plan, training), gpus, SearchCostOptionsFromSpec(spec));
  if (!projection.ok()) {
    return absl::Status(projection.status().code(),
                        absl::StrCat("projected cost: ", projection.status().message()));
  }
  return projection;
}

v1::ProjectedCost ProjectedCostToProto(const SearchCostProjection& projection) {
  v1::ProjectedCost proto;
  proto.set_gpus(projection.gpus);
  *proto.mutable_adaptive() = RunsCostToProto(projection.adaptive);
  *proto.mutable_adaptive_confirmations() = RunsCostToProto(projection.adaptive_confirmations);
  *proto.mutable_top_k() = RunsCostToProto(projection.top_k);
  *proto.mutable_exhaustive() = RunsCostToProto(projection.exhaustive);
  *proto.mutable_full_jobs() = RunsCostToProto(projection.full_jobs);
  proto.set_best_step_seconds(projection.best_step_seconds);
  proto.set_best_probe_seconds(projection.best_probe_seconds);
  proto.set_best_full_step_probe_seconds(projection.best_full_step_probe_seconds);
  return proto;
}

}  // namespace paratune
