#include "server/core/probe_queue.h"

#include <algorithm>

namespace paratune {

void ProbeQueue::Push(const Item& item) {
  auto [it, inserted] = queues_.try_emplace(item.search_id);
  if (inserted) turns_.push_back(item.search_id);
  it->second.push_back(item.candidate);
  ++size_;
}

std::optional<ProbeQueue::Item> ProbeQueue::PopFirstFitting(
    const std::function<bool(const Item&)>& fits) {
  for (auto turn = turns_.begin(); turn != turns_.end(); ++turn) {
    const int64_t search_id = *turn;
    std::deque<int64_t>& queue = queues_[search_id];
    for (auto it = queue.begin(); it != queue.end(); ++it) {
      const Item item{search_id, *it};
      if (!fits(item)) continue;
      queue.erase(it);
      --size_;
      turns_.erase(turn);
      if (queue.empty()) {
        queues_.erase(search_id);
      } else {
        turns_.push_back(search_id);
      }
      return item;
    }
  }
  return std::nullopt;
}

int64_t ProbeQueue::RemoveSearch(int64_t search_id) {
  auto it = queues_.find(search_id);
  if (it == queues_.end()) return 0;
  const int64_t removed = static_cast<int64_t>(it->second.size());
  queues_.erase(it);
  turns_.remove(search_id);
  size_ -= removed;
  return removed;
}

bool ProbeQueue::Remove(const Item& item) {
  auto it = queues_.find(item.search_id);
  if (it == queues_.end()) return false;
  std::deque<int64_t>& queue = it->second;
  auto found = std::find(queue.begin(), queue.end(), item.candidate);
  if (found == queue.end()) return false;
  queue.erase(found);
  --size_;
  if (queue.empty()) {
    queues_.erase(it);
    turns_.remove(item.search_id);
  }
  return true;
}

}  // namespace paratune
