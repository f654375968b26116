// The one-line progress of a search that `watch` prints and the live view heads with.
#ifndef PARATUNE_CLI_PROGRESS_LINE_H_
#define PARATUNE_CLI_PROGRESS_LINE_H_

#include <string>

#include "proto/search.pb.h"

namespace paratune {

// One line: "searches/3 PROBING: probed 2 of 40 candidates (2 ok, 0 failed), 5 could still
// win; best 410.5 TFLOP/s per GPU simulated (dp2 tp2 pp1 cp1 mbs1); ~3.00 GPU-hours, ~0.50 h
// left (projected)", the projection only while there is one.
std::string FormatProgress(const v1::Search& search);

}  // namespace paratune

#endif  // PARATUNE_CLI_PROGRESS_LINE_H_
