// What a search would cost, for `paratune plan` and `paratune submit --dry_run`: the
// estimator's projection (estimator/search_cost.h) of a search spec, as text for people.
// PlanResponse has no field for it, so --json output leaves it out.
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

// The options a search of `spec` runs with: its probe steps, top_k and adaptive settings, each
// unset (0) field as the server's default (the SearchCostOptions defaults), and short steps
// only for the backend the server sends them to (the sim; the cuda probe and the command
// templates run full steps yet). A spec of another policy than ADAPTIVE has no adaptive
// settings: ADAPTIVE is projected with the defaults.
SearchCostOptions SearchCostOptionsFromSpec(const v1::SearchSpec& spec);

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
