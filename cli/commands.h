// The subcommands of `paratune`. Each prints to `out` and returns the error to report.
#ifndef PARATUNE_CLI_COMMANDS_H_
#define PARATUNE_CLI_COMMANDS_H_

#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "cli/autotuner_client.h"
#include "cli/export.h"
#include "cli/output.h"
#include "proto/autotuner_service.pb.h"

namespace paratune {

// Offline: the estimator alone, no server.
absl::Status RunEstimate(const v1::EstimateRequest& request, const OutputOptions& output,
                         std::ostream& out);
// Prints what was planned, the counts and rejections, the memory map (coloured with
// output.color; its rows and the candidates bounded by request.limit), the candidates with
// their breakdown and what an ADAPTIVE, TOP_K and EXHAUSTIVE search of them would cost next
// to one full job per candidate (cli/cost_report.h); --json prints the PlanResponse, which
// holds all of these.
absl::Status RunPlan(const v1::PlanRequest& request, const OutputOptions& output,
                     std::ostream& out);
// `submit --dry_run`, offline: plans request.spec as `plan` would and prints what was
// planned and what the search would cost with its policy (and EXHAUSTIVE and one full job
// per candidate for comparison); --json prints the PlanResponse of all its candidates.
// Contacts no server.
absl::Status RunDryRun(const v1::CreateSearchRequest& request, const OutputOptions& output,
                       std::ostream& out);
// Plans request.spec and says why `config` is or is not among its candidates (see
// FormatExplanation). For people only: INVALID_ARGUMENT with output.json.
absl::Status RunExplain(const v1::PlanRequest& request, const v1::ParallelConfig& config,
                        const OutputOptions& output, std::ostream& out);

// Against a server.
struct SubmitOptions {
  // Follow the search like RunWatch, for at most watch_timeout.
  bool watch = false;
  absl::Duration watch_timeout = absl::Hours(24);
  // Refuse to submit (FAILED_PRECONDITION) when no live worker can host the search
  // (fleet_check.h) or the workers cannot be listed, instead of warning.
  bool require_workers = false;
};
// Checks the fleet (a warning when no live worker can host the search; --require_workers
// refuses), creates the search and prints its name, with a note when it searches recompute
// that the request left out; with options.watch, follows it like RunWatch. FAILED_PRECONDITION
// with the stop reason when the search failed at creation (nothing to probe), so scripts see a
// non-zero exit.
absl::Status RunSubmit(AutotunerClient& client, const v1::CreateSearchRequest& request,
                       const SubmitOptions& options, const OutputOptions& output,
                       std::ostream& out);
// Prints the search's event log so far, then every change as it comes: on a terminal the
// live view (cli/live_view.h) redrawn in place, else one line per event; then the ranked
// result when the search ends. FAILED_PRECONDITION when the search ended FAILED or
// CANCELLED, so scripts see a non-zero exit.
absl::Status RunWatch(AutotunerClient& client, const std::string& name,
                      absl::Duration watch_timeout, const OutputOptions& output, std::ostream& out);
absl::Status RunGet(AutotunerClient& client, const std::string& name, const OutputOptions& output,
                    std::ostream& out);
// The searches of one page with their best measured configuration (one GetSearch for each
// that measured one, as ListSearches leaves candidates out), fitted to the terminal.
absl::Status RunList(AutotunerClient& client, const v1::ListSearchesRequest& request,
                     const OutputOptions& output, std::ostream& out);
absl::Status RunCancel(AutotunerClient& client, const std::string& name,
                       const OutputOptions& output, std::ostream& out);
// Prints the best measured (or the named) candidate of search `name` in `format`
// (cli/export.h).
absl::Status RunExport(AutotunerClient& client, const std::string& name,
                       const std::string& candidate, ExportFormat format, std::ostream& out);
absl::Status RunEvents(AutotunerClient& client, const v1::ListSearchEventsRequest& request,
                       const OutputOptions& output, std::ostream& out);
absl::Status RunWorkers(AutotunerClient& client, const OutputOptions& output, std::ostream& out);

}  // namespace paratune

#endif  // PARATUNE_CLI_COMMANDS_H_
