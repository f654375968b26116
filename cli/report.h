// Human-readable renderings of paratune.v1 results for the terminal. Every figure carries
// its unit; simulated probe results are always marked as simulated.
#ifndef PARATUNE_CLI_REPORT_H_
#define PARATUNE_CLI_REPORT_H_

#include <string>

#include "proto/autotuner_service.pb.h"
#include "proto/search.pb.h"

namespace paratune {

// Memory breakdown per term and stage, total, fraction and verdict, then the predicted step
// time and its parts, tokens/s, TFLOP/s per GPU and MFU.
std::string FormatEstimate(const v1::ParallelConfig& config, const v1::EstimateResponse& estimate);

// What was planned (model, cluster, batch, sequence), the counts and the rejections by rule.
std::string FormatPlanSummary(const v1::SearchSpec& spec, const v1::PlanResponse& plan);

// The plan's candidates in predicted order, each with its memory, predicted TFLOP/s per GPU
// with its one-sigma error bar, MFU, and the step time with its parts.
std::string FormatPlanCandidates(const v1::PlanResponse& plan);

// One line: state, probes done of selected, best measured so far.
std::string FormatProgress(const v1::Search& search);

// Header (name, model, cluster, policy, state, counts, stop reason) and the ranked table:
// config, memory GiB and fraction, predicted and probed TFLOP/s per GPU, outcome, with
// simulated results marked "(sim)" and a legend saying so; below it, where each probed
// candidate ran ("dp4 tp2 pp1 cp1 mbs1 ran on workers/3 (node-1, 8 x h100-80gb, ranks 0-7)")
// and why each waiting one waits.
std::string FormatSearch(const v1::Search& search);

// What `paratune watch` redraws on a terminal: the progress line, the latest event and the
// first `max_rows` ranked candidates.
std::string FormatLiveView(const v1::Search& search, const std::string& event, int max_rows);

// One row per search: name, display name, state, probed/selected, stop reason, created.
std::string FormatSearchList(const v1::ListSearchesResponse& response);

// One row per worker: name, host, GPUs ("8 x h100-80gb", the type the server matched them
// to, or "8 x unknown GPU <name>" when none), backends, state, probes completed, labels.
std::string FormatWorkers(const v1::ListWorkersResponse& response);

// One line per event, "TIME  TEXT", and the next page's flag when there is one.
std::string FormatEvents(const v1::ListSearchEventsResponse& response);

}  // namespace paratune

#endif  // PARATUNE_CLI_REPORT_H_
