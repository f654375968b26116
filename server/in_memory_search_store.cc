#include "server/in_memory_search_store.h"

#include "absl/strings/str_cat.h"

namespace paratune {

absl::StatusOr<int64_t> InMemorySearchStore::AllocateSearchId() {
  absl::MutexLock lock(&mu_);
  return ++last_search_id_;
}

absl::Status InMemorySearchStore::PutSearch(int64_t id, const v1::Search& search) {
  absl::MutexLock lock(&mu_);
  searches_[id] = search;
  return absl::OkStatus();
}

absl::StatusOr<v1::Search> InMemorySearchStore::GetSearch(int64_t id) {
  absl::MutexLock lock(&mu_);
  auto it = searches_.find(id);
  if (it == searches_.end()) {
    return absl::NotFoundError(absl::StrCat("search searches/", id, " not found"));
  }
  return it->second;
}

absl::StatusOr<SearchPage> InMemorySearchStore::ListSearches(int64_t page_size, int64_t before_id) {
  absl::MutexLock lock(&mu_);
  SearchPage page;
  auto it = before_id == 0 ? searches_.end() : searches_.lower_bound(before_id);
  while (it != searches_.begin()) {
    --it;
    if (static_cast<int64_t>(page.searches.size()) == page_size) {
      page.more = true;
      break;
    }
    v1::Search& search = page.searches.emplace_back(it->second);
    search.clear_candidates();
  }
  return page;
}

absl::Status InMemorySearchStore::PutWorker(int64_t id, const v1::Worker& worker) {
  absl::MutexLock lock(&mu_);
  workers_[id] = worker;
  return absl::OkStatus();
}

absl::StatusOr<std::vector<v1::Worker>> InMemorySearchStore::ListWorkers() {
  absl::MutexLock lock(&mu_);
  std::vector<v1::Worker> workers;
  workers.reserve(workers_.size());
  for (const auto& [id, worker] : workers_) workers.push_back(worker);
  return workers;
}

}  // namespace paratune
