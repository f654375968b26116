// Where each rank of a probe sits in the 4D grid, and the communicators it belongs to.
//
// Ranks follow Megatron-LM's order (megatron/core/parallel_state.py, order "tp-cp-ep-dp-pp"):
// tensor-parallel rank fastest, then context, data, pipeline. The scheduler places ranks in
// this order too (proto/probe.proto GangMember), so tensor x context groups never span
// workers.
//
// A mixture-of-experts model's expert layers see the same ranks as a second grid (Megatron-
// Core's parallel folding): initialize_model_parallel (core_v0.19.0) builds
// expert_decoder_rank_generator = RankGenerator(tp=etp, ep=ep, dp=edp, pp=pp, cp=1) in the same
// order, so inside each pipeline stage the tp x cp x dp ranks, counted in the order above, are
// folded into expert tensor rank fastest, then expert rank, then expert data rank, with
// edp = tp cp dp / (etp ep); the pipeline groups of both grids are the same.
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

// A rank's position in its stage's expert grid.
struct ExpertCoordinates {
  int64_t etp = 0;
  int64_t ep = 0;
  int64_t edp = 0;
};

// The communicators of a training step, as Megatron-LM creates them.
enum class RankGroup {
  kTensor,       // same cp, dp, pp: TP all-gathers and reduce-scatters
  kContext,      // same tp, dp, pp: KV exchanges of context parallelism
  kDataContext,  // same tp, pp: gradient reduce-scatter and parameter all-gather (the
                 // distributed optimizer shards over data x context parallel ranks)
  // Under hybrid sharding (RankLayout::hybrid) the data x context group splits in two, as
  // Megatron-LM's --num-distributed-optimizer-instances splits its data-parallel-with-context
  // ranks (parallel_state.py, initialize_model_parallel at core_v0.19.0: instance i holds the
  // i-th run of dp cp / instances consecutive ranks of each group, the inter-instance group
  // the ranks at one place in every instance) and TorchTitan's dense mesh ("pp",
  // "dp_replicate", "fsdp", "tp") with fsdp = dp_shard x cp (v0.2.2,
  // torchtitan/distributed/parallel_dims.py) places its replicas outside its shards:
  kDataShard,    // same tp, pp and dp / dp_shard: the dp_shard x cp ranks a replica's states
                 // are sharded over (reduce-scatter and all-gather)
  kDataReplica,  // same tp, cp, pp and dp mod dp_shard: the dp / dp_shard ranks holding the
                 // same shard, which all-reduce it
  kPipeline,     // same tp, cp, dp: send/recv between stages
  // The expert grid's groups, each inside one pipeline stage:
  kExpertTensor,  // same ep, edp: an expert's f_e split (all-gather after the dispatch,
                  // reduce-scatter before the combine)
  kExpert,        // same etp, edp: the dispatch and combine all-to-all between the E / ep
                  // experts of each rank
  kExpertData,    // same etp, ep: the expert weights' gradient reduction and parameter
                  // all-gather (Megatron-LM's intra_expt_dp_group)
};

// "tp", "cp", "dp", "dp_shard", "dp_replica", "pp", "etp", "ep", "edp": the group's name in results
// (CollectiveBandwidth.group).
const char* RankGroupName(RankGroup group);

// Sizes of the four axes of the ranks a probe runs (every size >= 1). A REPLICA probe runs
// one data-parallel replica: dp is 1 there whatever the configuration's data_parallel. The
// data-parallel ranks a replica's states are sharded over, dp_shard, are dp unless
// WithDataShards says otherwise.
class RankLayout {
 public:
  // A dense model's ranks: its expert grid is Megatron-LM's default, etp = tp and ep = 1, and
  // has_experts() is false.
  RankLayout(int64_t tp, int64_t cp, int64_t dp, int64_t pp)
      : RankLayout(tp, cp, dp, pp, /*etp=*/tp, /*ep=*/1, /*has_experts=*/false) {}
  // A mixture-of-experts model's ranks, its experts split over `ep` ranks and each expert's
  // FFN over `etp`. Requires etp >= 1, ep >= 1 and etp x ep dividing tp x cp x dp (the
  // caller checks it: ProbeSpec::FromAssignment).
  static RankLayout WithExperts(int64_t tp, int64_t cp, int64_t dp, int64_t pp, int64_t etp,
                                int64_t ep) {
    return RankLayout(tp, cp, dp, pp, etp, ep, /*has_experts=*/true);
  }

  int64_t tp() const { return tp_; }
  int64_t cp() const { return cp_; }
  int64_t dp() const { return dp_; }
  int64_t pp() const { return pp_; }
  int64_t dp_shard() const { return dp_shard_; }
  // Hybrid sharding: the states are sharded within groups of dp_shard x cp ranks and
  // replicated across dp / dp_shard of them (config.dp_shard_group).
  bool hybrid() const { return dp_shard_ < dp_; }
  // The group a replica's states are sharded over: kDataShard under hybrid sharding, else the
  // whole data x context group.
  RankGroup DataShardGroup() const {
    return hybrid() ? RankGroup::kDataShard : RankGroup::kDataContext;
  }
  // The same ranks with the states sharded within groups of `dp_shard` data-parallel ranks.
  // Requires dp_shard >= 1 dividing dp (the caller checks it: ParallelConfig::Create).
  RankLayout WithDataShards(int64_t dp_shard) const {
    RankLayout layout = *this;
    layout.dp_shard_ = dp_shard;
    return layout;
  }
  int64_t etp() const { return etp_; }
  int64_t ep() const { return ep_; }
  // tp x cp x dp / (etp x ep).
  int64_t edp() const { return tp_ * cp_ * dp_ / (etp_ * ep_); }
  // Whether the model has experts, and so the probe needs the expert groups' communicators.
  bool has_experts() const { return has_experts_; }
  int64_t world_size() const { return tp_ * cp_ * dp_ * pp_; }

  // For 0 <= rank < world_size().
  RankCoordinates CoordinatesOf(int64_t rank) const;
  int64_t RankOf(const RankCoordinates& coordinates) const;
  ExpertCoordinates ExpertCoordinatesOf(int64_t rank) const;

  // Ranks in `group` (the product of its axes' sizes).
  int64_t GroupSize(RankGroup group) const;
  // The lowest rank of rank's `group`: the same for exactly the ranks of one group, and
  // non-negative, as ncclCommSplit's color must be.
  int64_t GroupColor(RankGroup group, int64_t rank) const;
  // Rank's index inside its `group`, in [0, GroupSize): the key for ncclCommSplit, so that a
  // group's NCCL ranks follow its axis (cp + cp_size x dp for kDataContext, cp + cp_size x
  // (dp mod dp_shard) for kDataShard).
  int64_t GroupRank(RankGroup group, int64_t rank) const;

 private:
  RankLayout(int64_t tp, int64_t cp, int64_t dp, int64_t pp, int64_t etp, int64_t ep,
             bool has_experts)
      : tp_(tp),
        cp_(cp),
        dp_(dp),
        pp_(pp),
        etp_(etp),
        ep_(ep),
        dp_shard_(dp),
        has_experts_(has_experts) {}

  int64_t tp_, cp_, dp_, pp_, etp_, ep_, dp_shard_;
  bool has_experts_;
};

}  // namespace paratune

#endif  // PARATUNE_WORKER_PROBE_RANK_LAYOUT_H_
