// Facts about a search's lifecycle (proto/search.proto, SearchState) that the server and the
// CLI share.
#ifndef PARATUNE_CONVERT_SEARCH_STATE_H_
#define PARATUNE_CONVERT_SEARCH_STATE_H_

#include "proto/search.pb.h"

namespace paratune {

// SUCCEEDED, FAILED and CANCELLED: states no later change leaves.
inline bool SearchEnded(v1::SearchState state) {
  return state == v1::SUCCEEDED || state == v1::FAILED || state == v1::CANCELLED;
}

}  // namespace paratune

#endif  // PARATUNE_CONVERT_SEARCH_STATE_H_
