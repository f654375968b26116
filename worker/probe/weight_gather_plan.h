// When a pipeline stage whose weights are sharded over its data x context group (dp_sharding
// full: ZeRO-3, Megatron-FSDP's optim_grads_params, PyTorch's FSDP2) gathers each unit's
// weights, into which of its gathered-weight slots, and which gather overlaps which
// computation.
//
// A unit (ChunkUnitsOf: the embedding, a layer, the final norm with the LM head) is what
// FSDP2 wraps in one fully_shard call and all-gathers as one group (TorchTitan's apply_fsdp
// shards each transformer block, then the root with the embedding, final norm and output;
// torchtitan/models/llama3/infra/parallelize.py). Every forward and every backward of a unit
// uses its weights gathered whole: FSDP2 all-gathers them in the unit's pre-forward hook and
// frees them after its forward (reshard_after_forward True, the default for all but the root
// module: torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py, FSDPParamGroup.pre_forward
// and post_forward), and gathers them again in its pre-backward hook
// (FSDPParamGroup.pre_backward), so a micro-batch gathers each unit twice, as the estimator's
// DataParallelTrafficPerStep counts for kFull. The gathers run on their own stream
// (FSDPCommContext.all_gather_stream, _fsdp_param_group.py) one unit ahead: while a unit
// computes, the next one's weights arrive (FSDP2's backward prefetch of the next unit,
// FSDPState._pre_backward / _backward_prefetch, and in forward the all-gather the CPU issues
// for the next unit before the current one's kernels finish; Megatron-FSDP's next-bucket
// all-gather). The prefetched gather needs a second slot, so the rank holds
// kGatheredWeightSlots units' weights at once, as GatheredWeightBytes counts them.
//
// Not modelled: FSDP2 keeps the root module's weights (TorchTitan's embedding, final norm and
// LM head) gathered from its forward to its backward (FSDPState._lazy_init: "For the root, do
// not reshard after forward"); the probe gathers every unit before each use.
//
// A pure plan: the stage runner asks the device for each gather and wait at its use.
#ifndef PARATUNE_WORKER_PROBE_WEIGHT_GATHER_PLAN_H_
#define PARATUNE_WORKER_PROBE_WEIGHT_GATHER_PLAN_H_

#include <cstdint>
#include <vector>

#include "worker/probe/overlap_plan.h"
#include "worker/probe/pipeline_schedule.h"

namespace paratune {

// The unit that computes and the one whose weights arrive beside it.
inline constexpr int64_t kGatheredWeightSlots = 2;

// One use of a unit's gathered weights: its forward or backward in pass `pass` (the schedule's
// passes in order), from gathered-weight slot `slot`.
struct WeightUse {
  int64_t pass = 0;
  int64_t unit = 0;
  PassDirection direction = PassDirection::kForward;
  int64_t slot = 0;

  bool operator==(const WeightUse& other) const {
    return pass == other.pass && unit == other.unit && direction == other.direction &&
           slot == other.slot;
  }
};

// The step's uses in the order the stage runner reaches them: a pass's units in forward order
// (embedding, layers, loss) in a forward pass, in reverse in a backward pass. Use i's weights
// are gathered into slot i mod kGatheredWeightSlots, its gather dispatched on the data-parallel
// stream at the start of use i - 1 (use 0's at the step's start, exposed), so that it overlaps
// use i - 1's computation; use i waits for it at its own start. The gather of use i + 1 then
// overwrites the slot use i - 1 read, once the compute stream has finished it.
struct WeightGatherPlan {
  std::vector<WeightUse> uses;
};

// The plan of a stage whose chunks have `chunks` (ChunkUnitsOf) running `schedule`
// (PipelineScheduleOf).
WeightGatherPlan WeightGatherPlanOf(const std::vector<ScheduleStep>& schedule,
                                    const std::vector<ChunkUnits>& chunks);

}  // namespace paratune

#endif  // PARATUNE_WORKER_PROBE_WEIGHT_GATHER_PLAN_H_
