// How one rank reduces, steps and gathers its stage's parameters: whether the data x context
// group's gradient reduction runs on the probe at all, whether it overlaps the schedule, the
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
  // Whether the data x context group's gradient reduction runs (else it is modelled, or the
  // group has one rank: DataParallelModelled).
  bool reduce_gradients = false;
  // Whether it runs bucket by bucket beside the schedule (ProbeSpec::data_parallel_overlap).
  bool overlapped = false;
  OverlapOptions overlap;
  // Optimizer shards per bucket: dp x cp with the distributed optimizer (also where the probe
  // runs one replica of it), 1 without; and this rank's index among them (its place in the
  // data x context group; every rank steps whole buckets with one shard).
  int64_t shard_count = 1;
  int64_t shard_index = 0;
  // The ranges reduced, stepped and gathered: the overlap plan's buckets when overlapped
  // (DataParallelPlanOf; they do not depend on the micro-batches), else one per region
  // (RegionBuckets).
  std::vector<ParameterBucket> buckets;

  // This rank's shard of bucket `bucket`.
  OptimizerShard ShardOf(int64_t bucket) const {
    return OptimizerShardOf(buckets[bucket], shard_count, shard_index);
  }
};

// The layout of global rank `rank` of `spec`, whose stage's footprint is `footprint`.
OptimizerLayout OptimizerLayoutOf(const ProbeSpec& spec, const FootprintPlan& footprint,
                                  int64_t rank);

}  // namespace paratune

#endif  // PARATUNE_WORKER_PROBE_OPTIMIZER_LAYOUT_H_
