#include "cli/commands.h"

#include "absl/strings/str_cat.h"
#include "cli/plan_report.h"
#include "cli/report.h"
#include "common/status_macros.h"
#include "convert/estimate_requests.h"
#include "convert/spec_convert.h"
#include "estimator/planner.h"

namespace paratune {
namespace {

bool Ended(v1::SearchState state) {
  return state == v1::SUCCEEDED || state == v1::FAILED || state == v1::CANCELLED;
}

absl::Status EndStatus(const v1::Search& search) {
  if (search.state() == v1::FAILED || search.state() == v1::CANCELLED) {
    return absl::FailedPreconditionError(absl::StrCat(
        search.name(), " ended ", v1::SearchState_Name(search.state()), ": ",
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
  const std::string text = absl::StrCat(
      FormatPlanSummary(request.spec(), detailed.response), "\n",
      FormatMemoryMap(detailed.plan, detailed.spec.plan_options, detailed.spec.cluster), "\n",
      FormatPlanCandidates(detailed.response));
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
                           spec.plan_options, detailed.plan,
                           detailed.response.candidates_size());
  return absl::OkStatus();
}

absl::Status RunSubmit(AutotunerClient& client, const v1::CreateSearchRequest& request,
                       bool watch, absl::Duration watch_timeout, const OutputOptions& output,
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
  PT_RETURN_IF_ERROR(client.WatchSearch(
      name, watch_timeout, [&](const v1::WatchSearchResponse& event) {
        last = event.search();
        if (output.json) return;
        const std::string line = FormatProgress(last);
        if (output.terminal) {
          // Redraw in place; "\033[K" clears what a longer previous line left behind.
          out << "\r" << line << "\033[K" << std::flush;
        } else if (!event.event().empty()) {
          out << event.event() << "\n";
        } else if (line != last_line) {
          out << line << "\n";
        }
        last_line = line;
      }));
  if (output.terminal && !output.json) out << "\n";
  if (!Ended(last.state())) {
    return absl::UnavailableError(absl::StrCat("the watch of ", name,
                                               " ended before the search did"));
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
