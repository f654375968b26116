#include "server/gang_placement.h"

#include <algorithm>

namespace paratune {
namespace {

int64_t WholeGroups(int64_t gpus, int64_t group_size) { return gpus / group_size * group_size; }

}  // namespace

std::optional<std::vector<RankShare>> PlaceGang(int64_t ranks, int64_t group_size,
                                                const FreeWorker& requester,
                                                std::vector<FreeWorker> others) {
  std::sort(others.begin(), others.end(), [](const FreeWorker& a, const FreeWorker& b) {
    return a.gpus != b.gpus ? a.gpus > b.gpus : a.worker_id < b.worker_id;
  });
  others.insert(others.begin(), requester);
  std::vector<RankShare> shares;
  int64_t placed = 0;
  for (const FreeWorker& worker : others) {
    if (placed == ranks) break;
    const int64_t take = std::min(WholeGroups(worker.gpus, group_size), ranks - placed);
    if (take == 0) continue;
    shares.push_back(RankShare{worker.worker_id, placed, take});
    placed += take;
  }
  if (placed < ranks) return std::nullopt;
  return shares;
}

int64_t GangCapacity(int64_t group_size, const std::vector<FreeWorker>& workers) {
  int64_t capacity = 0;
  for (const FreeWorker& worker : workers) capacity += WholeGroups(worker.gpus, group_size);
  return capacity;
}

}  // namespace paratune
