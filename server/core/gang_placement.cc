#include "server/core/gang_placement.h"

#include <algorithm>
#include <functional>

namespace paratune {

std::vector<int64_t> NodeShares(int64_t ranks, int64_t gpus_per_node) {
  std::vector<int64_t> shares(ranks / gpus_per_node, gpus_per_node);
  if (ranks % gpus_per_node != 0) shares.push_back(ranks % gpus_per_node);
  return shares;
}

std::optional<std::vector<RankShare>> PlaceGang(int64_t ranks, int64_t gpus_per_node,
                                                const FreeWorker& requester,
                                                std::vector<FreeWorker> others) {
  const std::vector<int64_t> node_shares = NodeShares(ranks, gpus_per_node);
  if (requester.gpus < node_shares[0]) return std::nullopt;
  std::sort(others.begin(), others.end(), [](const FreeWorker& a, const FreeWorker& b) {
    return a.gpus != b.gpus ? a.gpus < b.gpus : a.worker_id < b.worker_id;
  });
  std::vector<RankShare> shares = {RankShare{requester.worker_id, 0, node_shares[0]}};
  int64_t first_rank = node_shares[0];
  for (size_t i = 1; i < node_shares.size(); ++i) {
    const auto fits = std::find_if(others.begin(), others.end(), [&](const FreeWorker& worker) {
      return worker.gpus >= node_shares[i];
    });
    if (fits == others.end()) return std::nullopt;
    shares.push_back(RankShare{fits->worker_id, first_rank, node_shares[i]});
    first_rank += node_shares[i];
    others.erase(fits);
  }
  return shares;
}

int64_t HostableShares(int64_t ranks, int64_t gpus_per_node, std::vector<FreeWorker> workers) {
  // Largest share to the largest worker: a worker that cannot hold a share cannot hold any
  // larger one, so greedy matching in this order is the most that fits.
  std::vector<int64_t> node_shares = NodeShares(ranks, gpus_per_node);
  std::sort(node_shares.begin(), node_shares.end(), std::greater<>());
  std::sort(workers.begin(), workers.end(),
            [](const FreeWorker& a, const FreeWorker& b) { return a.gpus > b.gpus; });
  int64_t hosted = 0;
  size_t next_worker = 0;
  for (int64_t share : node_shares) {
    if (next_worker == workers.size() || workers[next_worker].gpus < share) continue;
    ++hosted;
    ++next_worker;
  }
  return hosted;
}

}  // namespace paratune
