// How one rank reduces, steps and gathers its stage's parameters: whether the gradient
// reductions (over the data x context group, and an MoE model's experts' over the expert
// data-parallel group) run on the probe at all, whether it overlaps the schedule, the
// buckets it works in, and the rank's optimizer shard of each. StageRunner decides with it,
// the device (worker/cuda/cuda_device_ops.h) is set up with it, and the step plan's recording
// reads it, so that all three agree on every bucket.
#ifndef PARATUNE_WORKER_PROBE_OPTIMIZER_LAYOUT_H_
#define PARATUNE_WORKER_PROBE_OPTIMIZER_LAYOUT_H_

#include <cstdint>
#include <vector>

#include "worker/probe/footprint_plan.h"
#include "worker/probe/overlap_plan.h"
#include "worker/probe/probe_spec.h"

namespace paratune {

struct OptimizerLayout {
  // Whether gradient reductions run (else they are modelled, DataParallelModelled, or every
  // group they would run over has one rank), and over which groups: the data x context group's
  // buckets and, for a mixture-of-experts model, the expert data-parallel group's, each where
  // its group has more than one rank.
  bool reduce_gradients = false;
  ReducedGroups reduced;
  // Whether the gradients are sharded (FootprintPlan::sharded_gradients): the buckets are then
  // the stage's units (UnitBuckets), each reduce-scattered from kGradientStaging into the
  // rank's shard in kGradients after the unit's backward, every micro-batch, on the compute
  // stream.
  bool sharded_gradients = false;
  // Whether the weights are sharded too (FootprintPlan::sharded_weights): each unit's are
  // gathered before its forward and its backward (weight_gather_plan.h), and Adam updates the
  // rank's shard of them in kWeights, which no gather follows.
  bool sharded_weights = false;
  // Whether they run bucket by bucket beside the schedule (ProbeSpec::data_parallel_overlap);
  // never under sharded gradients.
  bool overlapped = false;
  OverlapOptions overlap;
  // The stage's partitions (ParameterLayout::dense and experts): their shard counts, dp x cp
  // and the expert data-parallel size with the distributed optimizer (also where the probe runs
  // one replica of it), 1 without, and where their states start.
  ParameterPartition dense;
  ParameterPartition experts;
  // This rank's place in the data x context group and in the expert data-parallel group (every
  // rank steps whole buckets with one shard).
  int64_t data_context_rank = 0;
  int64_t expert_data_rank = 0;
  // The ranges reduced, stepped and gathered: the units under sharded gradients
  // (UnitBuckets), the overlap plan's buckets when overlapped (DataParallelPlanOf; they do not
  // depend on the micro-batches), else one per region (RegionBuckets).
  std::vector<ParameterBucket> buckets;

  // The partition of bucket `bucket` and this rank's index in its group.
  const ParameterPartition& PartitionOf(int64_t bucket) const {
    return buckets[bucket].group == RankGroup::kExpertData ? experts : dense;
  }
  int64_t GroupRankOf(int64_t bucket) const {
    return buckets[bucket].group == RankGroup::kExpertData ? expert_data_rank : data_context_rank;
  }
  // Whether bucket `bucket` is reduced (and, with the distributed optimizer, gathered).
  bool Reduces(int64_t bucket) const {
    return reduce_gradients && reduced.Reduces(buckets[bucket]);
  }
  // This rank's shard of bucket `bucket`.
  OptimizerShard ShardOf(int64_t bucket) const {
    return OptimizerShardOf(buckets[bucket], PartitionOf(bucket), GroupRankOf(bucket));
  }
};

// The layout of global rank `rank` of `spec`, whose stage's footprint is `footprint`.
OptimizerLayout OptimizerLayoutOf(const ProbeSpec& spec, const FootprintPlan& footprint,
                                  int64_t rank);

}  // namespace paratune

#endif  // PARATUNE_WORKER_PROBE_OPTIMIZER_LAYOUT_H_
