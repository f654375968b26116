// Where a probe's ranks run (DESIGN.md §7, gang dispatch): on the worker that asked for work
// when it has the GPUs, else spread over it and other free workers. Pure; the scheduler
// decides which workers are free.
#ifndef PARATUNE_SERVER_GANG_PLACEMENT_H_
#define PARATUNE_SERVER_GANG_PLACEMENT_H_

#include <cstdint>
#include <optional>
#include <vector>

namespace paratune {

// A worker that could take part, with the GPUs it offers.
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

// Splits `ranks` ranks over `requester` and, if it cannot hold them all, over `others`, in
// shares that are multiples of `group_size` (tensor x context parallel: those groups talk on
// every layer and must stay inside one host). Picks the fewest workers: the requester first
// (it asked, so it is certainly polling), then the others with the most GPUs first, ties by
// lower worker id, so placement is deterministic. Each share takes as many whole groups as the
// worker holds, up to what is left. nullopt when the workers together cannot hold the ranks.
// Requires ranks and group_size >= 1 and group_size dividing ranks.
std::optional<std::vector<RankShare>> PlaceGang(int64_t ranks, int64_t group_size,
                                                const FreeWorker& requester,
                                                std::vector<FreeWorker> others);

// The most ranks in whole groups of `group_size` that `workers` can hold together.
int64_t GangCapacity(int64_t group_size, const std::vector<FreeWorker>& workers);

}  // namespace paratune

#endif  // PARATUNE_SERVER_GANG_PLACEMENT_H_
