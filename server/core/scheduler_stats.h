// Plain counts the scheduler exposes for monitoring (DESIGN.md §9). The server binary's
// metrics (server/core/scheduler_metrics.h) read them at every scrape; the scheduler itself knows
// nothing about Prometheus.
#ifndef PARATUNE_SERVER_CORE_SCHEDULER_STATS_H_
#define PARATUNE_SERVER_CORE_SCHEDULER_STATS_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "proto/probe.pb.h"
#include "proto/search.pb.h"
#include "proto/worker.pb.h"
#include "server/core/search_summary.h"

namespace paratune {

// Why configurations of a search were not probed, as SearchTotals::candidates_pruned keys.
inline constexpr char kPrunedInvalid[] = "invalid";
inline constexpr char kPrunedOutOfMemory[] = "out_of_memory";
inline constexpr char kPrunedRisky[] = "risky";
inline constexpr char kPrunedNotSelected[] = "not_selected";

// Cumulative counts over searches; they only grow while the scheduler runs.
struct SearchTotals {
  int64_t searches_created = 0;
  // Ended searches by final state (SUCCEEDED, FAILED, CANCELLED).
  std::map<v1::SearchState, int64_t> searches_ended;
  // Final probe results recorded for candidates, by backend and outcome. A probe retried
  // after an infrastructure error counts once, with its last outcome.
  std::map<std::pair<std::string, v1::ProbeOutcome>, int64_t> probe_results;
  // Configurations enumerated by planning.
  int64_t candidates_enumerated = 0;
  // Configurations selected for probing.
  int64_t candidates_selected = 0;
  // Enumerated configurations not selected, by reason (kPruned*); with candidates_selected
  // they add up to candidates_enumerated once every search has ended. kPrunedNotSelected is
  // counted when a search ends: an ADAPTIVE search selects more as it goes.
  std::map<std::string, int64_t> candidates_pruned;
  // Wall seconds x GPUs of the probes that finished, as their workers reported them.
  double probe_gpu_seconds = 0;
};

// Adds what `search` contributed so far: its creation, its candidates, its recorded probe
// results and, once it ended, its final state.
void AddSearchTotals(const v1::Search& search, SearchTotals& totals);

struct SchedulerStats {
  // Every search since the scheduler started; running ones as far as they got.
  SearchTotals totals;
  // Searches that have not ended, by state (PENDING, PLANNING, PROBING).
  std::map<v1::SearchState, int64_t> active_searches;
  // The searches that have not ended, then the kEndedSearchSummariesKept that ended last
  // (since the scheduler started), oldest first.
  std::vector<SearchSummary> searches;
  // Probes waiting for a worker.
  int64_t queued_probes = 0;
  // Probes leased to a worker.
  int64_t running_probes = 0;
  // Registered workers and their GPUs, by state (IDLE, BUSY, LOST).
  std::map<v1::WorkerState, int64_t> workers;
  std::map<v1::WorkerState, int64_t> worker_gpus;
};

// Adds a search that has not ended: its totals, its state and its summary.
void AddActiveSearch(const v1::Search& search, SchedulerStats& stats);

}  // namespace paratune

#endif  // PARATUNE_SERVER_CORE_SCHEDULER_STATS_H_
