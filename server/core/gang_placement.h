// Where a probe's ranks run (DESIGN.md §7, gang dispatch; docs/scheduler.md, "Placement").
// Every worker stands for one node of the search's cluster: a probe's ranks are cut into node
// shares of gpus_per_node ranks (the last one the remainder), and each share runs on its own
// worker, so a probe measures the topology of the cluster it stands for (never 16 GPUs of one
// worker as 4 nodes of 4). Pure; the scheduler decides which workers are eligible and free.
#ifndef PARATUNE_SERVER_CORE_GANG_PLACEMENT_H_
#define PARATUNE_SERVER_CORE_GANG_PLACEMENT_H_

#include <cstdint>
#include <optional>
#include <vector>

namespace paratune {

// A worker that could take part, with its GPU count.
struct FreeWorker {
  int64_t worker_id = 0;
  int64_t gpus = 0;
};

// One worker's contiguous share of the ranks.
struct RankShare {
  int64_t worker_id = 0;
  int64_t first_rank = 0;
  int64_t num_ranks = 0;
};

// The ranks of each node a probe of `ranks` ranks spans, in rank order: gpus_per_node each,
// the last one what is left. Requires ranks and gpus_per_node >= 1.
std::vector<int64_t> NodeShares(int64_t ranks, int64_t gpus_per_node);

// Places the node shares of `ranks` on `requester`, which takes the first (rank 0: it asked,
// so it is certainly polling), and on distinct workers of `others`, each further share on the
// worker with the fewest GPUs that can hold it (ties by lower worker id), so that larger
// workers stay free for larger shares and placement is deterministic. nullopt when the
// requester cannot hold the first share or the others cannot hold the rest.
std::optional<std::vector<RankShare>> PlaceGang(int64_t ranks, int64_t gpus_per_node,
                                                const FreeWorker& requester,
                                                std::vector<FreeWorker> others);

// How many of the node shares of `ranks` `workers` can hold at once, one share per worker.
int64_t HostableShares(int64_t ranks, int64_t gpus_per_node, std::vector<FreeWorker> workers);

}  // namespace paratune

#endif  // PARATUNE_SERVER_CORE_GANG_PLACEMENT_H_
