// Where the scheduler keeps its durable state (DESIGN.md §7): searches with their candidates
// and probe results, workers, probe leases, and each search's event log. Changes arrive as
// one StoreBatch per scheduler operation and are applied atomically, so a crash never leaves
// a result recorded without its lease released (or the reverse).
#ifndef PARATUNE_SERVER_CORE_SEARCH_STORE_H_
#define PARATUNE_SERVER_CORE_SEARCH_STORE_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "proto/search.pb.h"
#include "proto/search_event.pb.h"
#include "proto/worker.pb.h"
#include "server/core/scheduler_state.pb.h"

namespace paratune {

// One line of a search's event log.
struct StoredEvent {
  int64_t search_id = 0;
  // Increasing over the whole store; orders events (assigned by the store on Apply).
  int64_t sequence = 0;
  absl::Time time;
  // What happened, without sequence, time and text (the store keeps those apart; the text is
  // rendered on reading); an event stored before events had kinds has its text alone.
  v1::SearchEvent event;
};

// What changed of one search: its own fields and the candidates that changed, so that what
// a probe result costs to store does not grow with the search (docs/storage.md).
struct SearchUpdate {
  // Every field of the search but its candidates, which this never holds.
  v1::Search fields;
  // The candidates added or changed, by n (their index in Search.candidates). Candidates are
  // only ever appended: a new one's n is the search's candidate count before it.
  std::map<int64_t, v1::Candidate> candidates;
};

// The changes of one scheduler operation.
struct StoreBatch {
  // Each changed search, by id; the latest snapshot of each changed worker, by id.
  std::map<int64_t, SearchUpdate> searches;
  std::map<int64_t, v1::Worker> workers;
  // Workers that deregistered: their rows go, and their ids are never handed out again.
  std::set<int64_t> removed_workers;
  // Leases created or changed, by probe name; and those that ended.
  std::map<std::string, internal::LeaseState> leases;
  std::set<std::string> ended_leases;
  // Appended in order; `sequence` is ignored.
  std::vector<StoredEvent> events;

  bool empty() const {
    return searches.empty() && workers.empty() && removed_workers.empty() && leases.empty() &&
           ended_leases.empty() && events.empty();
  }
};

// What a restarting scheduler resumes from.
struct StoredState {
  // Searches that have not ended, oldest first.
  std::vector<v1::Search> unfinished_searches;
  // Every worker, by id.
  std::map<int64_t, v1::Worker> workers;
  std::vector<internal::LeaseState> leases;
  // The largest search id ever allocated (0 when none).
  int64_t last_search_id = 0;
  // The largest worker id ever stored, deregistered workers included (0 when none).
  int64_t last_worker_id = 0;
};

// One page of searches, newest first.
struct SearchPage {
  std::vector<v1::Search> searches;
  // Whether searches older than the last one returned exist.
  bool more = false;
};

// Implementations must be thread-safe.
class SearchStore {
 public:
  virtual ~SearchStore() = default;

  // A new search id, larger than every id handed out before (ids order searches by age).
  virtual absl::StatusOr<int64_t> AllocateSearchId() = 0;

  // Applies every change of `batch` or none. INVALID_ARGUMENT naming the search when an
  // update's fields hold candidates or a new candidate would leave a gap after the stored ones.
  virtual absl::Status Apply(const StoreBatch& batch) = 0;

  virtual absl::StatusOr<StoredState> Load() = 0;

  // NOT_FOUND naming searches/{id} when absent.
  virtual absl::StatusOr<v1::Search> GetSearch(int64_t id) = 0;

  // Up to page_size (>= 1) searches with id < before_id (every id when before_id is 0),
  // highest id first, with their candidates cleared and best_candidate set to the stored
  // BestMeasured candidate (convert/search_progress.h), when one succeeded.
  virtual absl::StatusOr<SearchPage> ListSearches(int64_t page_size, int64_t before_id) = 0;

  // Every worker, by id.
  virtual absl::StatusOr<std::vector<v1::Worker>> ListWorkers() = 0;

  // Up to `limit` (>= 1) events of the search with sequence > after_sequence, oldest first.
  virtual absl::StatusOr<std::vector<StoredEvent>> ListEvents(int64_t search_id,
                                                              int64_t after_sequence,
                                                              int64_t limit) = 0;
};

}  // namespace paratune

#endif  // PARATUNE_SERVER_CORE_SEARCH_STORE_H_
