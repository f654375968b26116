// What a search would cost, for `paratune plan` and `paratune submit --dry_run`: the
// projection of a search spec (convert/cost_projection.h) as text for people; --json prints
// it as PlanResponse.cost.
#ifndef PARATUNE_CLI_COST_REPORT_H_
#define PARATUNE_CLI_COST_REPORT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "convert/estimate_requests.h"
#include "estimator/cluster_spec.h"
#include "estimator/search_cost.h"
#include "proto/search.pb.h"

namespace paratune {

// A header stating the assumptions (GPUs per probe, start-up, steps, probes one after
// another) with the best predicted candidate's full step and probe; one row per policy of
// `policies` in the order given (ADAPTIVE as a range: its expected probes, then with its
// confirmations) and one for one full job per candidate; then notes on how ADAPTIVE was
// counted (a projection assuming measurements equal predictions), how the full jobs were
// assumed (NeMo's AutoConfigurator defaults) and ADAPTIVE's share of their GPU-hours.
// `relative_error` is the model's (PerformanceEstimate::relative_error), for the notes. One
// line saying there is nothing to project when the plan has no candidate.
std::string FormatSearchCost(const SearchCostProjection& projection,
                             const SearchCostOptions& options, const ClusterSpec& cluster,
                             double relative_error, const std::vector<v1::SearchPolicy>& policies);

// FormatSearchCost of `detailed` (the plan of `spec`) for `policies`. INVALID_ARGUMENT naming
// the setting and its value ("projected cost: tolerance (-1) must be in (0, 1]") when one is
// out of range for a projection.
absl::StatusOr<std::string> ProjectAndFormatSearchCost(
    const DetailedPlan& detailed, const v1::SearchSpec& spec,
    const std::vector<v1::SearchPolicy>& policies);

}  // namespace paratune

#endif  // PARATUNE_CLI_COST_REPORT_H_
