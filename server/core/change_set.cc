#include "server/core/change_set.h"

#include <algorithm>
#include <utility>

namespace paratune {

void ChangeSet::PutSearch(int64_t id, SearchUpdate update,
                          const std::vector<v1::SearchEvent>& events, absl::Time now) {
  SearchUpdate& pending = batch_.searches[id];
  pending.fields = std::move(update.fields);
  for (auto& [n, candidate] : update.candidates) pending.candidates[n] = std::move(candidate);
  for (const v1::SearchEvent& event : events) {
    StoredEvent& stored = batch_.events.emplace_back(StoredEvent{id, 0, now, event});
    // The log keeps the time in its own column.
    stored.event.clear_time();
  }
}

void ChangeSet::Tell(const std::vector<SearchObserver*>& observers,
                     v1::WatchSearchResponse change) {
  notices_.push_back(Notice{observers, std::move(change)});
}

void ChangeSet::PutWorker(int64_t id, const v1::Worker& worker) {
  batch_.removed_workers.erase(id);
  batch_.workers[id] = worker;
}

void ChangeSet::RemoveWorker(int64_t id) {
  batch_.workers.erase(id);
  batch_.removed_workers.insert(id);
}

void ChangeSet::PutLease(const internal::LeaseState& lease) {
  batch_.ended_leases.erase(lease.probe());
  batch_.leases[lease.probe()] = lease;
}

void ChangeSet::EndLease(const std::string& probe) {
  batch_.leases.erase(probe);
  batch_.ended_leases.insert(probe);
  if (std::exchange(held_back_by_limit_, false)) probes_queued_ = true;
}

absl::Status ChangeSet::Commit(SearchStore& store) {
  if (absl::Status status = store.Apply(batch_); !status.ok()) return status;
  batch_ = StoreBatch();
  std::vector<Notice> notices = std::exchange(notices_, {});
  for (const Notice& notice : notices) {
    for (SearchObserver* observer : notice.observers) {
      observer->OnSearchChanged(notice.change);
    }
  }
  return absl::OkStatus();
}

void ChangeSet::Discard() {
  batch_ = StoreBatch();
  notices_.clear();
}

bool ChangeSet::TakeProbesQueued() { return std::exchange(probes_queued_, false); }

void ChangeSet::ForgetObserver(SearchObserver* observer) {
  for (Notice& notice : notices_) {
    notice.observers.erase(std::remove(notice.observers.begin(), notice.observers.end(), observer),
                           notice.observers.end());
  }
}

}  // namespace paratune
