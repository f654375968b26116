// The one rendering of a search event for people (SearchEvent.text): the server fills it on
// every read and watch, and the CLI, the console and the logs show it; none of them parses
// it, they read the event's fields (proto/search_event.proto).
#ifndef PARATUNE_CONVERT_SEARCH_EVENT_TEXT_H_
#define PARATUNE_CONVERT_SEARCH_EVENT_TEXT_H_

#include <string>

#include "proto/search_event.pb.h"

namespace paratune {

// One line, e.g. "candidates/3 probed on workers/1 + workers/2: 402.1 TFLOP/s per GPU
// (measured)" or "candidates/0 leased to workers/1 (ranks 0-7) (attempt 1 of 2, full scope, 8
// GPUs)". An event of SEARCH_EVENT_KIND_UNSPECIFIED (stored before events had kinds) is its
// stored text.
std::string RenderSearchEvent(const v1::SearchEvent& event);

}  // namespace paratune

#endif  // PARATUNE_CONVERT_SEARCH_EVENT_TEXT_H_
