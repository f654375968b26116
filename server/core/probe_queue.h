// The probes waiting for a worker, served round-robin between searches so that no search
// starves behind a large one (DESIGN.md §7, fairness).
#ifndef PARATUNE_SERVER_CORE_PROBE_QUEUE_H_
#define PARATUNE_SERVER_CORE_PROBE_QUEUE_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <optional>

#include "absl/container/flat_hash_map.h"

namespace paratune {

// Thread-compatible: the scheduler guards it with its own mutex.
class ProbeQueue {
 public:
  struct Item {
    int64_t search_id = 0;
    int64_t candidate = 0;  // n of searches/{id}/candidates/{n}

    bool operator==(const Item& other) const {
      return search_id == other.search_id && candidate == other.candidate;
    }
  };

  // Appends `item` to its search's queue; a search new to the queue takes the last turn.
  void Push(const Item& item);

  // The oldest item for which fits(item) holds, of the first search in turn that has one;
  // that search then takes the last turn. nullopt when nothing fits.
  std::optional<Item> PopFirstFitting(const std::function<bool(const Item&)>& fits);

  // Drops every item of the search; returns how many.
  int64_t RemoveSearch(int64_t search_id);

  // Drops `item`, leaving the turns of the searches as they are; returns whether it was
  // queued.
  bool Remove(const Item& item);

  int64_t size() const { return size_; }

 private:
  // Searches with queued items, in turn order.
  std::list<int64_t> turns_;
  absl::flat_hash_map<int64_t, std::deque<int64_t>> queues_;
  int64_t size_ = 0;
};

}  // namespace paratune

#endif  // PARATUNE_SERVER_CORE_PROBE_QUEUE_H_
