// The view `paratune watch` redraws in place on a terminal while a search runs.
#ifndef PARATUNE_CLI_LIVE_VIEW_H_
#define PARATUNE_CLI_LIVE_VIEW_H_

#include <cstddef>
#include <string>
#include <vector>

#include "proto/search.pb.h"

namespace paratune {

// The progress line (cli/progress_line.h), the `recent_events` (oldest first), the first
// `max_rows` ranked candidates, why queued candidates wait, and the legend of simulated and
// replayed numbers; every line fits in `columns` - 1, so that none wraps (a wrapped line
// would throw the redraw off by a row): prose wraps, events are cut, and the table's columns
// give way in the order RankedCandidates (cli/report.h) documents, never the measured
// TFLOP/s. Each line ends with '\n'.
std::string FormatLiveView(const v1::Search& search, const std::vector<std::string>& recent_events,
                           int max_rows, size_t columns);

}  // namespace paratune

#endif  // PARATUNE_CLI_LIVE_VIEW_H_
