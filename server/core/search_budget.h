// A search's limits (SearchBudget, DESIGN.md §6): whether one is reached, and which.
#ifndef PARATUNE_SERVER_CORE_SEARCH_BUDGET_H_
#define PARATUNE_SERVER_CORE_SEARCH_BUDGET_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/time/time.h"
#include "proto/search.pb.h"

namespace paratune {

// What a search has used so far.
struct BudgetUse {
  int64_t probes_started = 0;  // confirmations and retries included
  double gpu_seconds = 0;
  absl::Duration elapsed;  // since the search was created
};

// The first limit `use` reached ("max_probes (20) reached", "deadline (1h) passed", ...), or
// nullopt. Zero limits are unlimited.
std::optional<std::string> BudgetReached(const v1::SearchBudget& budget, const BudgetUse& use);

// Whether the deadline passed `elapsed` after the search was created; that limit also stops
// running probes.
bool DeadlinePassed(const v1::SearchBudget& budget, absl::Duration elapsed);

// How long before `now` `search` was created.
absl::Duration SearchAge(const v1::Search& search, absl::Time now);

}  // namespace paratune

#endif  // PARATUNE_SERVER_CORE_SEARCH_BUDGET_H_
