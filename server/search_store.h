// Where the scheduler keeps searches (with their candidates) and workers, behind an
// interface so the in-memory store can be swapped for a durable one (SQLite, DESIGN.md §7).
// Probe leases are not stored apart: a leased candidate is CANDIDATE_RUNNING with its worker
// and attempt count, which is what a restarted scheduler needs to re-queue it.
#ifndef PARATUNE_SERVER_SEARCH_STORE_H_
#define PARATUNE_SERVER_SEARCH_STORE_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "proto/autotuner_service.pb.h"
#include "proto/search.pb.h"

namespace paratune {

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

  // Inserts or replaces the search with id `id`.
  virtual absl::Status PutSearch(int64_t id, const v1::Search& search) = 0;

  // NOT_FOUND naming searches/{id} when absent.
  virtual absl::StatusOr<v1::Search> GetSearch(int64_t id) = 0;

  // Up to page_size (>= 1) searches with id < before_id (every id when before_id is 0),
  // highest id first, with their candidates cleared.
  virtual absl::StatusOr<SearchPage> ListSearches(int64_t page_size, int64_t before_id) = 0;

  // Inserts or replaces the worker with id `id`.
  virtual absl::Status PutWorker(int64_t id, const v1::Worker& worker) = 0;

  // Every worker, by id.
  virtual absl::StatusOr<std::vector<v1::Worker>> ListWorkers() = 0;
};

}  // namespace paratune

#endif  // PARATUNE_SERVER_SEARCH_STORE_H_
