// How far a search is, in words: the one-line progress that `watch` prints and the live view
// heads with, and the same words in `get` (from Search.progress, as the server counted it).
#ifndef PARATUNE_CLI_PROGRESS_LINE_H_
#define PARATUNE_CLI_PROGRESS_LINE_H_

#include <string>

#include "proto/search.pb.h"

namespace paratune {

// "probed 2 of 40 candidates (1 ok, 1 failed), 5 could still win", then, while probes run or
// wait, "; 2 running, 1 waiting (1 confirming)", the confirming ones among those. Why
// candidates wait is left to the lines
// that name them (`get`, the live view) or the search (`list`): it is too long for this one.
std::string DescribeProgress(const v1::SearchProgress& progress);

// One line: "searches/3 PROBING: " DescribeProgress "; best 410.5 TFLOP/s per GPU simulated
// (dp2 tp2 pp1 cp1 mbs1); ~3.00 GPU-hours, ~0.50 h left (projected)", the projection only
// while there is one.
std::string FormatProgress(const v1::Search& search);

}  // namespace paratune

#endif  // PARATUNE_CLI_PROGRESS_LINE_H_
