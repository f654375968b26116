// Where each rank of a probe sits in the 4D grid, and the communicators it belongs to.
//
// Ranks follow Megatron-LM's order (megatron/core/parallel_state.py, order "tp-cp-ep-dp-pp"):
// tensor-parallel rank fastest, then context, data, pipeline. The scheduler places ranks in
// this order too (proto/probe.proto GangMember), so tensor x context groups never span
// workers.
#ifndef PARATUNE_WORKER_PROBE_RANK_LAYOUT_H_
#define PARATUNE_WORKER_PROBE_RANK_LAYOUT_H_

#include <cstdint>

namespace paratune {

// A rank's position on each axis.
struct RankCoordinates {
  int64_t tp = 0;
  int64_t cp = 0;
  int64_t dp = 0;
  int64_t pp = 0;
};

// The communicators of a training step, as Megatron-LM creates them.
enum class RankGroup {
  kTensor,       // same cp, dp, pp: TP all-gathers and reduce-scatters
  kContext,      // same tp, dp, pp: KV exchanges of context parallelism
  kDataContext,  // same tp, pp: gradient reduce-scatter and parameter all-gather (the
                 // distributed optimizer shards over data x context parallel ranks)
  kPipeline,     // same tp, cp, dp: send/recv between stages
};

// "tp", "cp", "dp", "pp": the group's name in results (CollectiveBandwidth.group).
const char* RankGroupName(RankGroup group);

// Sizes of the four axes of the ranks a probe runs (every size >= 1). A REPLICA probe runs
// one data-parallel replica: dp is 1 there whatever the configuration's data_parallel.
class RankLayout {
 public:
  RankLayout(int64_t tp, int64_t cp, int64_t dp, int64_t pp) : tp_(tp), cp_(cp), dp_(dp), pp_(pp) {}

  int64_t tp() const { return tp_; }
  int64_t cp() const { return cp_; }
  int64_t dp() const { return dp_; }
  int64_t pp() const { return pp_; }
  int64_t world_size() const { return tp_ * cp_ * dp_ * pp_; }

  // For 0 <= rank < world_size().
  RankCoordinates CoordinatesOf(int64_t rank) const;
  int64_t RankOf(const RankCoordinates& coordinates) const;

  // Ranks in `group` (the product of its axes' sizes).
  int64_t GroupSize(RankGroup group) const;
  // The lowest rank of rank's `group`: the same for exactly the ranks of one group, and
  // non-negative, as ncclCommSplit's color must be.
  int64_t GroupColor(RankGroup group, int64_t rank) const;
  // Rank's index inside its `group`, in [0, GroupSize): the key for ncclCommSplit, so that a
  // group's NCCL ranks follow its axis (cp + cp_size x dp for kDataContext).
  int64_t GroupRank(RankGroup group, int64_t rank) const;

 private:
  int64_t tp_, cp_, dp_, pp_;
};

}  // namespace paratune

#endif  // PARATUNE_WORKER_PROBE_RANK_LAYOUT_H_
