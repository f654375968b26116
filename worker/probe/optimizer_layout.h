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
  // (dp_shard_group x cp under hybrid sharding) and the expert data-parallel size with the
  // distributed optimizer (also where the probe runs one replica of it), 1 without, and where
  // their states start.
  ParameterPartition dense;
  ParameterPartition experts;
  // This rank's place in the group the dense partition is sharded over (RankLayout::
  // DataShardGroup: the data x context group, or its shard group under hybrid sharding) and in
  // the expert data-parallel group (every rank steps whole buckets with one shard).
  int64_t data_context_rank = 0;
  int64_t expert_data_rank = 0;
  // The copies of each dense shard under hybrid sharding (the kDataReplica group's size; 1
  // without): each reduce-scatter of a dense bucket's gradients over the shard group is
  // followed by an all-reduce of the rank's shard over the replicas, as Megatron-LM's
  // _ParamAndGradBucketGroup.start_grad_sync follows the reduce-scatter in its distributed
  // optimizer instance with an all-reduce of the shard across instances
  // (param_and_grad_buffer.py, core_v0.19.0) and FSDP2's HSDP follows the reduce-scatter over
  // the shard mesh dimension with an all-reduce over the replicate one (TorchTitan v0.2.2 shards
  // over the ("dp_replicate", "fsdp") mesh, torchtitan/models/llama3/infra/parallelize.py).
  // Parameters are gathered within the shard group only.
  int64_t dense_replicas = 1;
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
  // Whether bucket `bucket`'s reduced shard is all-reduced over its replicas (hybrid sharding).
  bool ReducesAcrossReplicas(int64_t bucket) const {
    return Reduces(bucket) && buckets[bucket].group == RankGroup::kDataContext &&
           dense_replicas > 1;
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
