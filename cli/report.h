// Human-readable renderings of paratune.v1 results for the terminal. Every figure carries
// its unit; simulated probe results are always marked as simulated.
#ifndef PARATUNE_CLI_REPORT_H_
#define PARATUNE_CLI_REPORT_H_

#include <cstddef>
#include <set>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "cli/table.h"
#include "proto/autotuner_service.pb.h"
#include "proto/search.pb.h"

namespace paratune {

// "SAFE", "RISKY", "OOM" ("?" when unspecified).
std::string VerdictName(v1::MemoryVerdict verdict);

// Memory breakdown per term and stage, total, fraction and verdict, then the predicted step
// time and its parts, tokens/s, TFLOP/s per GPU and MFU.
std::string FormatEstimate(const v1::ParallelConfig& config, const v1::EstimateResponse& estimate);

// What was planned (model, cluster, batch, sequence), the counts and the rejections by rule.
std::string FormatPlanSummary(const v1::SearchSpec& spec, const v1::PlanResponse& plan);

// What the plan changed and what would change it, or "": a note when it searched selective
// and full recompute because nothing fitted without (PlanResponse.recompute_added), and when
// nothing fitted as requested, each change that alone gives candidates with the flags that
// make it (PlanResponse.advice).
std::string FormatPlanAdvice(const v1::PlanResponse& plan);

// The plan's candidates in predicted order, each with its memory, predicted TFLOP/s per GPU
// with its one-sigma error bar, MFU, and the step time with its parts.
std::string FormatPlanCandidates(const v1::PlanResponse& plan);

// Header (name, model, cluster, policy, state, counts, stop reason) and the ranked table:
// config, memory GiB and fraction, predicted and probed TFLOP/s per GPU, outcome, with
// simulated results marked "(sim)" and a legend saying so; below it, where each probed
// candidate ran ("dp4 tp2 pp1 cp1 mbs1 ran on workers/3 (node-1, 8 x h100-80gb, ranks 0-7)")
// and why each waiting one waits.
std::string FormatSearch(const v1::Search& search);

// How a table marks a number by where it came from (convert/result_source.h): no mark when
// measured; " (sim)", " (replay)" or " (extrap)" otherwise, with the line that explains the mark
// under the table (`legend` for `get`, `short_legend` for the live view).
struct SourceMark {
  std::string mark;
  std::string legend;
  std::string short_legend;
};
SourceMark SourceMarkOf(absl::string_view source);

// The ranked candidates of FormatSearch's table (the first `max_rows`, all when 0), and the
// sources (ResultSource) of the numbers in it. When fitted to a
// width (Table::RenderFitted) its columns give way in this order: the memory in GiB goes,
// the result is cut to 10 columns, the step time goes, the memory share goes, the predicted
// TFLOP/s go, the configuration is cut to 12 columns, the result goes. The rank and the
// probed (measured) TFLOP/s per GPU always stay.
struct CandidateTable {
  Table table;
  std::set<std::string> sources;
};
CandidateTable RankedCandidates(const v1::Search& search, int max_rows);

// One row per search, newest first: name, display name, state, candidates probed of its
// candidates (Search.progress), the best measured configuration by the parts that tell it
// apart from the search's other candidates (DescribeConfigApart) and its TFLOP/s per GPU
// (Search.best_candidate, which ListSearches sends; "(sim)" when simulated, "-" before any
// success), when it was created ("3m ago", against `now`), how long it ran (to its
// last update once ended, to `now` while it runs) and its stop reason cut to 48 columns
// (`get` prints it whole). With `width` > 0 the table fits in it: the stop reason is cut
// to 20 columns, the run time goes, the stop reason goes, the display name is cut to 8, the
// creation time goes, the display name goes, the configuration is cut to 12; the search, its
// state, its progress and its best TFLOP/s stay. Below the table, each FAILED search's stop
// reason, whole
// ("searches/2 failed: no memory-safe configuration to probe: ..."), and why a running
// search's candidates wait when no live workers can host one (SearchProgress.waiting_reason,
// "searches/3 waiting: needs 16 GPUs ...").
std::string FormatSearchList(const v1::ListSearchesResponse& response, absl::Time now,
                             size_t width);

// One row per worker: name, host, GPUs ("8 x h100-80gb", the type the server matched them
// to, or "8 x unknown GPU <name>" when none), backends, state, probes completed, labels.
std::string FormatWorkers(const v1::ListWorkersResponse& response);

// One line per event, "TIME  TEXT", and the next page's flag when there is one.
std::string FormatEvents(const v1::ListSearchEventsResponse& response);

}  // namespace paratune

#endif  // PARATUNE_CLI_REPORT_H_
