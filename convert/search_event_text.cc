#include "convert/search_event_text.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "convert/search_text.h"

namespace paratune {
namespace {

// "workers/1 (ranks 0-7) + workers/2 (ranks 8-15)".
std::string DescribeWorkers(const v1::SearchEvent& event) {
  std::vector<std::string> workers;
  for (const v1::ProbeHost& host : event.workers()) {
    workers.push_back(
        absl::StrCat(host.worker(), " (", DescribeRanks(host.first_rank(), host.num_ranks()), ")"));
  }
  return absl::StrJoin(workers, " + ");
}

// " (measured)", or nothing for a result whose source is not known.
std::string SourceLabel(const v1::SearchEvent& event) {
  return event.result_source().empty() ? "" : absl::StrCat(" (", event.result_source(), ")");
}

// "'s confirmation" for a confirmation probe's event: its attempts are its own.
std::string Confirmation(const v1::SearchEvent& event) {
  return event.confirmation() ? "'s confirmation" : "";
}

std::string ScreeningNote(const v1::SearchEvent& event) {
  return event.screening_result_stands() ? "; its screening result stands" : "";
}

std::string DescribeProbed(const v1::SearchEvent& event) {
  std::string result = event.outcome() == v1::PROBE_OK
                           ? absl::StrFormat("%.1f TFLOP/s per GPU", event.tflops_per_gpu())
                           : DescribeOutcome(event.outcome());
  if (event.outcome() != v1::PROBE_OK && !event.reason().empty()) {
    absl::StrAppend(&result, ": ", event.reason());
  }
  std::vector<std::string> names;
  for (const v1::ProbeHost& host : event.workers()) names.push_back(host.worker());
  const std::string text =
      absl::StrCat(event.candidate(), " probed on ", absl::StrJoin(names, " + "), ": ", result,
                   SourceLabel(event));
  return absl::StrCat(text, ScreeningNote(event));
}

std::string DescribeLeased(const v1::SearchEvent& event) {
  // A confirmation is a second look at a measured candidate, not a retry of a failed probe:
  // it shows what it confirms rather than an attempt number.
  const std::string attempt =
      absl::StrCat("attempt ", event.attempt(), " of ", event.max_attempts());
  const std::string which =
      event.confirmation()
          ? absl::StrCat("confirming its first measurement, ",
                         absl::StrFormat("%.1f", event.tflops_per_gpu()), " TFLOP/s per GPU",
                         event.result_source().empty() ? "" : " ", event.result_source(),
                         event.attempt() > 1 ? absl::StrCat(", confirmation ", attempt) : "")
          : attempt;
  return absl::StrCat(event.candidate(), " leased to ", DescribeWorkers(event), " (", which, ", ",
                      event.scope() == v1::PROBE_SCOPE_FULL ? "full" : "replica", " scope, ",
                      event.gpus(), " GPUs)");
}

std::string DescribeRuledOut(const v1::SearchEvent& event) {
  std::vector<std::string> configs;
  for (const v1::ParallelConfig& config : event.ruled_out()) {
    configs.push_back(DescribeConfig(config));
  }
  return absl::StrCat("ruled out as ", event.reason(), ": ", absl::StrJoin(configs, ", "));
}

std::string ByPrincipal(const v1::SearchEvent& event) {
  return event.principal().empty() ? "" : absl::StrCat(" by ", event.principal());
}

}  // namespace

std::string RenderSearchEvent(const v1::SearchEvent& event) {
  switch (event.kind()) {
    case v1::EVENT_CREATED:
      return absl::StrCat("search created", ByPrincipal(event), ": ",
                          DescribeMemoryEligible(event.counts(), event.probes_risky()),
                          " candidates, ", v1::SearchPolicy_Name(event.policy()));
    case v1::EVENT_PLANNED:
      return absl::StrCat("queued ", event.candidate(), " ", DescribeConfig(event.config()), ": ",
                          event.reason());
    case v1::EVENT_CONFIRMING:
      return absl::StrCat("confirming ", event.candidate(), " ", DescribeConfig(event.config()),
                          ": ", event.reason());
    case v1::EVENT_LEASED:
      return DescribeLeased(event);
    case v1::EVENT_SHARE_FINISHED:
      return absl::StrCat(event.candidate(), ": ", DescribeWorkers(event),
                          " finished its share of ", event.probe());
    case v1::EVENT_PROBED:
      return DescribeProbed(event);
    case v1::EVENT_REQUEUED:
      return absl::StrCat(event.candidate(), Confirmation(event), " re-queued after attempt ",
                          event.attempt(), " of ", event.max_attempts(), ": ", event.reason());
    case v1::EVENT_GAVE_UP:
      return absl::StrCat(event.candidate(), Confirmation(event), " failed: gave up after ",
                          event.attempt(), " of ", event.max_attempts(),
                          " attempts; last: ", event.reason(), ScreeningNote(event));
    case v1::EVENT_SKIPPED:
      return DescribeRuledOut(event);
    case v1::EVENT_WAITING:
      return event.reason().empty() ? absl::StrCat(event.candidate(), " can be placed again")
                                    : absl::StrCat(event.candidate(), " ", event.reason());
    case v1::EVENT_WORKER_LOST:
      return absl::StrCat(DescribeWorkers(event), " lost while running ", event.probe(), ": ",
                          event.reason());
    case v1::EVENT_RESUMED:
      return "server restarted; search resumed";
    case v1::EVENT_STOPPED:
      return absl::StrCat("search ", event.state() == v1::SUCCEEDED ? "succeeded" : "failed", ": ",
                          event.reason());
    case v1::EVENT_CANCELLED:
      return absl::StrCat("search cancelled", ByPrincipal(event), "; ", event.stopped_probes(),
                          " running probes told to stop");
    default:
      return event.text();
  }
}

}  // namespace paratune
