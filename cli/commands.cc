#include "cli/commands.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cli/cost_report.h"
#include "cli/plan_report.h"
#include "cli/report.h"
#include "common/status_macros.h"
#include "convert/estimate_requests.h"
#include "convert/search_request.h"
#include "convert/search_state.h"
#include "convert/spec_convert.h"
#include "estimator/planner.h"

namespace paratune {
namespace {

// Candidates the live view of `watch` shows, so it fits a terminal.
constexpr int kLiveRows = 12;

// Each line of `text` cut to `columns` - 1 characters: a line that wrapped would take two
// rows and break the cursor arithmetic of the redraw.
std::string CutLines(const std::string& text, int columns) {
  std::string out;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    if (static_cast<int>(line.size()) >= columns) line = line.substr(0, std::max(columns - 1, 1));
    absl::StrAppend(&out, line, "\n");
  }
  return out;
}

absl::Status EndStatus(const v1::Search& search) {
  if (search.state() == v1::FAILED || search.state() == v1::CANCELLED) {
    return absl::FailedPreconditionError(absl::StrCat(search.name(), " ended ",
                                                      v1::SearchState_Name(search.state()), ": ",
                                                      search.stop_reason()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status RunEstimate(const v1::EstimateRequest& request, const OutputOptions& output,
                         std::ostream& out) {
  PT_ASSIGN_OR_RETURN(v1::EstimateResponse response, AnswerEstimate(request));
  return Print(response, FormatEstimate(request.config(), response), output, out);
}

absl::Status RunPlan(const v1::PlanRequest& request, const OutputOptions& output,
                     std::ostream& out) {
  PT_ASSIGN_OR_RETURN(DetailedPlan detailed, AnswerPlanInDetail(request));
  if (output.json) return Print(detailed.response, "", output, out);
  PT_ASSIGN_OR_RETURN(const std::string cost,
                      ProjectAndFormatSearchCost(detailed, request.spec(),
                                                 {v1::ADAPTIVE, v1::TOP_K, v1::EXHAUSTIVE}));
  const std::string text = absl::StrCat(
      FormatPlanSummary(request.spec(), detailed.response), "\n",
      FormatMemoryMap(detailed.plan, detailed.spec.plan_options, detailed.spec.cluster), "\n",
      FormatPlanCandidates(detailed.response), "\n", cost);
  return Print(detailed.response, text, output, out);
}

absl::Status RunDryRun(const v1::CreateSearchRequest& request, const OutputOptions& output,
                       std::ostream& out) {
  // Refused here exactly as the server would refuse it.
  PT_RETURN_IF_ERROR(ValidateCreateSearchRequest(request).status());
  v1::PlanRequest plan_request;
  *plan_request.mutable_spec() = request.spec();
  PT_ASSIGN_OR_RETURN(DetailedPlan detailed, AnswerPlanInDetail(plan_request));
  if (output.json) return Print(detailed.response, "", output, out);
  const v1::SearchPolicy policy = request.spec().policy() == v1::SEARCH_POLICY_UNSPECIFIED
                                      ? v1::ADAPTIVE
                                      : request.spec().policy();
  std::vector<v1::SearchPolicy> policies = {policy};
  if (policy != v1::EXHAUSTIVE) policies.push_back(v1::EXHAUSTIVE);
  PT_ASSIGN_OR_RETURN(const std::string cost,
                      ProjectAndFormatSearchCost(detailed, request.spec(), policies));
  const std::string text = absl::StrCat(
      "dry run, nothing sent to a server: a search with policy ", v1::SearchPolicy_Name(policy),
      " of\n", FormatPlanSummary(request.spec(), detailed.response), "\n", cost);
  return Print(detailed.response, text, output, out);
}

absl::Status RunExplain(const v1::PlanRequest& request, const v1::ParallelConfig& config,
                        const OutputOptions& output, std::ostream& out) {
  if (output.json) {
    return absl::InvalidArgumentError("--explain prints for people; it does not take --json");
  }
  PT_ASSIGN_OR_RETURN(const ParallelDims dims, ParallelDimsFromProto(config));
  PT_ASSIGN_OR_RETURN(const DetailedPlan detailed, AnswerPlanInDetail(request));
  const ResolvedSpec& spec = detailed.spec;
  const ConfigurationExplanation explanation =
      ExplainConfiguration(spec.model, spec.training, spec.cluster, spec.plan_options,
                           detailed.params, detailed.plan, dims);
  out << FormatExplanation(explanation, dims, spec.model, spec.training, spec.cluster,
                           spec.plan_options, detailed.plan, detailed.response.candidates_size());
  return absl::OkStatus();
}

absl::Status RunSubmit(AutotunerClient& client, const v1::CreateSearchRequest& request, bool watch,
                       absl::Duration watch_timeout, const OutputOptions& output,
                       std::ostream& out) {
  PT_ASSIGN_OR_RETURN(v1::Search search, client.CreateSearch(request));
  if (!watch) {
    return Print(search, absl::StrCat("created ", search.name(), "\n"), output, out);
  }
  if (!output.json) out << "created " << search.name() << "\n";
  return RunWatch(client, search.name(), watch_timeout, output, out);
}

absl::Status RunWatch(AutotunerClient& client, const std::string& name,
                      absl::Duration watch_timeout, const OutputOptions& output,
                      std::ostream& out) {
  v1::Search last;
  std::string last_line;
  // Lines of the live view drawn last, to move back over them.
  int drawn_lines = 0;
  PT_RETURN_IF_ERROR(
      client.WatchSearch(name, watch_timeout, [&](const v1::WatchSearchResponse& event) {
        last = event.search();
        if (output.json) return;
        if (output.terminal) {
          // Redraw in place: up over the last view, clear to the end of the screen.
          const std::string view =
              CutLines(FormatLiveView(last, event.event(), kLiveRows), output.terminal_columns);
          if (drawn_lines > 0) out << "\033[" << drawn_lines << "A";
          out << "\r\033[J" << view << std::flush;
          drawn_lines = static_cast<int>(std::count(view.begin(), view.end(), '\n'));
          return;
        }
        const std::string line = FormatProgress(last);
        if (!event.event().empty()) {
          out << event.event() << "\n";
        } else if (line != last_line) {
          out << line << "\n";
        }
        last_line = line;
      }));
  if (output.terminal && !output.json && drawn_lines > 0) {
    out << "\033[" << drawn_lines << "A\r\033[J";
  }
  if (!SearchEnded(last.state())) {
    return absl::UnavailableError(
        absl::StrCat("the watch of ", name, " ended before the search did"));
  }
  PT_RETURN_IF_ERROR(Print(last, absl::StrCat("\n", FormatSearch(last)), output, out));
  return EndStatus(last);
}

absl::Status RunGet(AutotunerClient& client, const std::string& name, const OutputOptions& output,
                    std::ostream& out) {
  PT_ASSIGN_OR_RETURN(v1::Search search, client.GetSearch(name));
  return Print(search, FormatSearch(search), output, out);
}

absl::Status RunList(AutotunerClient& client, const v1::ListSearchesRequest& request,
                     const OutputOptions& output, std::ostream& out) {
  PT_ASSIGN_OR_RETURN(v1::ListSearchesResponse response, client.ListSearches(request));
  return Print(response, FormatSearchList(response), output, out);
}

absl::Status RunCancel(AutotunerClient& client, const std::string& name,
                       const OutputOptions& output, std::ostream& out) {
  PT_ASSIGN_OR_RETURN(v1::Search search, client.CancelSearch(name));
  return Print(search, absl::StrCat("cancelled ", search.name(), "\n"), output, out);
}

absl::Status RunExport(AutotunerClient& client, const std::string& name,
                       const std::string& candidate, ExportFormat format, std::ostream& out) {
  PT_ASSIGN_OR_RETURN(const v1::Search search, client.GetSearch(name));
  PT_ASSIGN_OR_RETURN(const v1::Candidate chosen, ChooseCandidate(search, candidate));
  PT_ASSIGN_OR_RETURN(const std::string text, ExportCandidate(search, chosen, format));
  out << text;
  return absl::OkStatus();
}

absl::Status RunEvents(AutotunerClient& client, const v1::ListSearchEventsRequest& request,
                       const OutputOptions& output, std::ostream& out) {
  PT_ASSIGN_OR_RETURN(v1::ListSearchEventsResponse response, client.ListSearchEvents(request));
  return Print(response, FormatEvents(response), output, out);
}

absl::Status RunWorkers(AutotunerClient& client, const OutputOptions& output, std::ostream& out) {
  PT_ASSIGN_OR_RETURN(v1::ListWorkersResponse response, client.ListWorkers());
  return Print(response, FormatWorkers(response), output, out);
}

}  // namespace paratune
