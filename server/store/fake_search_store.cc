#include "server/store/fake_search_store.h"

#include <utility>

#include "server/store/sqlite_search_store.h"

namespace paratune {

FakeSearchStore::FakeSearchStore() : store_(*SqliteSearchStore::Open(":memory:")) {}

void FakeSearchStore::FailNextWrites(int64_t count, absl::Status status) {
  absl::MutexLock lock(&mu_);
  failures_left_ = count;
  failure_ = std::move(status);
}

void FakeSearchStore::LoseNextCandidateWrites(int64_t count) {
  absl::MutexLock lock(&mu_);
  candidate_losses_left_ = count;
}

int64_t FakeSearchStore::writes() const {
  absl::MutexLock lock(&mu_);
  return writes_;
}

bool FakeSearchStore::last_write_failed() const {
  absl::MutexLock lock(&mu_);
  return last_write_failed_;
}

absl::StatusOr<int64_t> FakeSearchStore::AllocateSearchId() { return store_->AllocateSearchId(); }

absl::Status FakeSearchStore::Apply(const StoreBatch& batch) {
  absl::MutexLock lock(&mu_);
  if (batch.empty()) return absl::OkStatus();
  if (failures_left_ > 0) {
    --failures_left_;
    last_write_failed_ = true;
    return failure_;
  }
  absl::Status status;
  if (candidate_losses_left_ > 0) {
    --candidate_losses_left_;
    StoreBatch lossy = batch;
    for (auto& [id, update] : lossy.searches) update.candidates.clear();
    status = store_->Apply(lossy);
  } else {
    status = store_->Apply(batch);
  }
  last_write_failed_ = !status.ok();
  if (status.ok()) ++writes_;
  return status;
}

absl::StatusOr<StoredState> FakeSearchStore::Load() { return store_->Load(); }

absl::StatusOr<v1::Search> FakeSearchStore::GetSearch(int64_t id) { return store_->GetSearch(id); }

absl::StatusOr<SearchPage> FakeSearchStore::ListSearches(int64_t page_size, int64_t before_id) {
  return store_->ListSearches(page_size, before_id);
}

absl::StatusOr<std::vector<v1::Worker>> FakeSearchStore::ListWorkers() {
  return store_->ListWorkers();
}

absl::StatusOr<std::vector<StoredEvent>> FakeSearchStore::ListEvents(int64_t search_id,
                                                                     int64_t after_sequence,
                                                                     int64_t limit) {
  return store_->ListEvents(search_id, after_sequence, limit);
}

}  // namespace paratune
