// The names in a pinned framework release's list (frameworks/*.txt): argument names of
// Megatron-LM, override keys of NeMo or Megatron-Bridge, each file saying where they came from.
// For the tests that hold templates and exports to those releases.
#ifndef PARATUNE_FRAMEWORKS_PINNED_LIST_H_
#define PARATUNE_FRAMEWORKS_PINNED_LIST_H_

#include <set>
#include <string>

#include "absl/status/statusor.h"

namespace paratune {

// The first word of every line of the file at `path` that is neither blank nor a '#'
// comment. NOT_FOUND naming the path when it cannot be read.
absl::StatusOr<std::set<std::string>> ReadPinnedList(const std::string& path);

}  // namespace paratune

#endif  // PARATUNE_FRAMEWORKS_PINNED_LIST_H_
