// A SearchStore for tests that can be told to fail its next writes, as a busy or broken
// database would, or to lose the candidates of its next writes, as a scheduler that changed a
// candidate without naming it in the update would. Everything else is an in-memory
// SqliteSearchStore.
#ifndef PARATUNE_SERVER_STORE_FAKE_SEARCH_STORE_H_
#define PARATUNE_SERVER_STORE_FAKE_SEARCH_STORE_H_

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "server/core/search_store.h"

namespace paratune {

// Thread-safe.
class FakeSearchStore : public SearchStore {
 public:
  FakeSearchStore();

  // The next `count` Apply calls with changes fail with `status` and change nothing (an
  // empty batch writes nothing, so it cannot fail).
  void FailNextWrites(int64_t count, absl::Status status);
  // The next `count` Apply calls store their batch without the candidates of its updates.
  void LoseNextCandidateWrites(int64_t count);
  // Apply calls that changed the store.
  int64_t writes() const;
  // Whether the last Apply with changes failed: the scheduler holds changes it has not stored.
  bool last_write_failed() const;

  absl::StatusOr<int64_t> AllocateSearchId() override;
  absl::Status Apply(const StoreBatch& batch) override;
  absl::StatusOr<StoredState> Load() override;
  absl::StatusOr<v1::Search> GetSearch(int64_t id) override;
  absl::StatusOr<SearchPage> ListSearches(int64_t page_size, int64_t before_id) override;
  absl::StatusOr<std::vector<v1::Worker>> ListWorkers() override;
  absl::StatusOr<std::vector<StoredEvent>> ListEvents(int64_t search_id, int64_t after_sequence,
                                                      int64_t limit) override;

 private:
  const std::unique_ptr<SearchStore> store_;
  mutable absl::Mutex mu_;
  int64_t failures_left_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status failure_ ABSL_GUARDED_BY(mu_);
  int64_t candidate_losses_left_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t writes_ ABSL_GUARDED_BY(mu_) = 0;
  bool last_write_failed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace paratune

#endif  // PARATUNE_SERVER_STORE_FAKE_SEARCH_STORE_H_
