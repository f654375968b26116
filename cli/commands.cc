#include "cli/commands.h"

#include <algorithm>
#include <deque>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/cost_report.h"
#include "cli/fleet_check.h"
#include "cli/live_view.h"
#include "cli/plan_report.h"
#include "cli/progress_line.h"
#include "cli/report.h"
#include "common/status_macros.h"
#include "convert/estimate_requests.h"
#include "convert/plan_explanation.h"
#include "convert/search_request.h"
#include "convert/search_state.h"
#include "convert/search_view.h"
#include "google/protobuf/util/time_util.h"

namespace paratune {
namespace {

// Candidates and most recent events the live view of `watch` shows, so that it fits a
// terminal.
constexpr int kLiveRows = 12;
constexpr size_t kLiveEvents = 4;
// ListSearchEvents' largest page.
constexpr int64_t kEventPageSize = 1000;

// The texts of search `name`'s events logged up to `until`, oldest first.
absl::StatusOr<std::vector<std::string>> EventsUntil(AutotunerClient& client,
                                                     const std::string& name,
                                                     const google::protobuf::Timestamp& until) {
  std::vector<std::string> texts;
  v1::ListSearchEventsRequest request;
  request.set_name(name);
  request.set_page_size(kEventPageSize);
  while (true) {
    PT_ASSIGN_OR_RETURN(const v1::ListSearchEventsResponse page, client.ListSearchEvents(request));
    for (const v1::SearchEvent& event : page.events()) {
      if (event.time() > until) return texts;
      texts.push_back(event.text());
    }
    if (page.next_page_token().empty()) return texts;
    request.set_page_token(page.next_page_token());
  }
}

// Shows a watched search as it changes: on a terminal the live view (cli/live_view.h)
// redrawn in place; otherwise each event on a line, and the progress line when it changes
// without one.
class WatchDisplay {
 public:
  WatchDisplay(const OutputOptions& output, std::ostream& out) : output_(output), out_(out) {}

  // `events` are what changed since the last call, oldest first.
  void Show(const v1::Search& search, const std::vector<std::string>& events) {
    if (output_.terminal) {
      for (const std::string& event : events) recent_events_.push_back(event);
      while (recent_events_.size() > kLiveEvents) recent_events_.pop_front();
      const std::string view =
          FormatLiveView(search, {recent_events_.begin(), recent_events_.end()}, kLiveRows,
                         static_cast<size_t>(output_.terminal_columns));
      // Redraw in place: up over the last view, clear to the end of the screen.
      if (drawn_lines_ > 0) out_ << "\033[" << drawn_lines_ << "A";
      out_ << "\r\033[J" << view << std::flush;
      drawn_lines_ = static_cast<int>(std::count(view.begin(), view.end(), '\n'));
      return;
    }
    for (const std::string& event : events) out_ << event << "\n";
    const std::string line = FormatProgress(search);
    if (events.empty() && line != last_line_) out_ << line << "\n";
    last_line_ = line;
  }

  // Erases the live view, so that what follows prints where it began.
  void Clear() {
    if (drawn_lines_ > 0) out_ << "\033[" << drawn_lines_ << "A\r\033[J";
    drawn_lines_ = 0;
  }

 private:
  const OutputOptions& output_;
  std::ostream& out_;
  std::deque<std::string> recent_events_;
  std::string last_line_;
  // Lines of the live view drawn last, to move back over them.
  int drawn_lines_ = 0;
};

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
      FormatMemoryMap(detailed.response.memory_map(), output.color), "\n",
      FormatPlanAdvice(detailed.response), FormatPlanCandidates(detailed.response), "\n", cost);
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
  v1::ExplainRequest explain;
  *explain.mutable_plan() = request;
  *explain.mutable_config() = config;
  PT_ASSIGN_OR_RETURN(const v1::ExplainResponse explanation, AnswerExplain(explain));
  out << FormatExplanation(config, explanation);
  return absl::OkStatus();
}

absl::Status RunSubmit(AutotunerClient& client, const v1::CreateSearchRequest& request,
                       const SubmitOptions& options, const OutputOptions& output,
                       std::ostream& out) {
  absl::StatusOr<v1::ListWorkersResponse> workers = client.ListWorkers();
  if (!workers.ok() && options.require_workers) return workers.status();
  if (workers.ok()) {
    if (const std::string cannot = NoWorkerCanHost(request.spec(), *workers); !cannot.empty()) {
      if (options.require_workers) {
        return absl::FailedPreconditionError(
            absl::StrCat(cannot, "; not submitted (--require_workers)"));
      }
      if (!output.json) out << "warning: " << cannot << "; its probes wait for one\n";
    }
  }
  PT_ASSIGN_OR_RETURN(v1::Search search, client.CreateSearch(request));
  std::string text = absl::StrCat("created ", search.name(), "\n");
  if (request.spec().space().recompute_modes().empty() &&
      !search.spec().space().recompute_modes().empty()) {
    absl::StrAppend(&text,
                    "no configuration fits without activation recompute: the search also "
                    "searches selective and full recompute\n");
  }
  if (search.state() == v1::FAILED) {
    PT_RETURN_IF_ERROR(Print(search, text, output, out));
    return absl::FailedPreconditionError(
        absl::StrCat(search.name(), " failed at creation: ", search.stop_reason()));
  }
  if (!options.watch) return Print(search, text, output, out);
  if (!output.json) out << text;
  return RunWatch(client, search.name(), options.watch_timeout, output, out);
}

absl::Status RunWatch(AutotunerClient& client, const std::string& name,
                      absl::Duration watch_timeout, const OutputOptions& output,
                      std::ostream& out) {
  WatchedSearch watched;
  v1::Search last;
  WatchDisplay display(output, out);
  bool started = false;
  PT_RETURN_IF_ERROR(client.WatchSearch(
      name, watch_timeout, [&](const v1::WatchSearchResponse& response) -> absl::Status {
        PT_RETURN_IF_ERROR(watched.Apply(response));
        last = watched.View();
        if (output.json) return absl::OkStatus();
        std::vector<std::string> events;
        if (!started) {
          started = true;
          // The stream starts with the search as it is, and then reports every later change
          // once; what came before is in the log, up to this search's last update (each
          // change is logged with the time of the update it made).
          PT_ASSIGN_OR_RETURN(events, EventsUntil(client, name, last.update_time()));
        } else {
          for (const v1::SearchEvent& event : response.events()) events.push_back(event.text());
        }
        display.Show(last, events);
        return absl::OkStatus();
      }));
  display.Clear();
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
  if (output.json) return Print(response, "", output, out);
  return Print(response,
               FormatSearchList(response, absl::Now(),
                                output.terminal ? static_cast<size_t>(output.terminal_columns) : 0),
               output, out);
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
