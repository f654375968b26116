// A SearchStore in process memory: lost on restart; the default until SQLite arrives.
#ifndef PARATUNE_SERVER_IN_MEMORY_SEARCH_STORE_H_
#define PARATUNE_SERVER_IN_MEMORY_SEARCH_STORE_H_

#include <cstdint>
#include <map>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "server/search_store.h"

namespace paratune {

// Thread-safe (one mutex). Never fails.
class InMemorySearchStore : public SearchStore {
 public:
  absl::StatusOr<int64_t> AllocateSearchId() override;
  absl::Status PutSearch(int64_t id, const v1::Search& search) override;
  absl::StatusOr<v1::Search> GetSearch(int64_t id) override;
  absl::StatusOr<SearchPage> ListSearches(int64_t page_size, int64_t before_id) override;
  absl::Status PutWorker(int64_t id, const v1::Worker& worker) override;
  absl::StatusOr<std::vector<v1::Worker>> ListWorkers() override;

 private:
  absl::Mutex mu_;
  int64_t last_search_id_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<int64_t, v1::Search> searches_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, v1::Worker> workers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace paratune

#endif  // PARATUNE_SERVER_IN_MEMORY_SEARCH_STORE_H_
