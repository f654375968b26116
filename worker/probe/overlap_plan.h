// When and on which CUDA stream one pipeline stage issues its data-parallel collectives in a
// training step, so that they overlap computation as in Megatron-LM with
// --overlap-grad-reduce and --overlap-param-gather (megatron/core at commit d98e8a6, 2026):
//
// - Buckets. Each model chunk has its own gradient buffer (training.py,
//   wrap_model_chunks_with_ddp: one DistributedDataParallel per chunk), split into buckets of
//   DefaultBucketElements(dp x cp) parameters only on pipeline stage 0's first chunk; every
//   other chunk and stage keeps one bucket ("data-parallel communication on these stages is
//   not on the critical path": distributed_data_parallel.py, DistributedDataParallel.__init__;
//   training.py, get_model's per_chunk_bucket_sizes), the tied embedding alone with the
//   distributed optimizer (gradient_buckets.h).
// - Gradients. A bucket's reduce-scatter (all-reduce without the distributed optimizer) starts
//   when all its parameters have the gradient of the step's last micro-batch
//   (param_and_grad_buffer.py, _ParamAndGradBucketGroup.register_grad_ready, which counts only
//   while is_last_microbatch, i.e. outside DistributedDataParallel.no_sync). Megatron-LM's
//   default --align-grad-reduce decides which stages do that (pipeline_parallel/schedules.py):
//   without interleaving, stage 0 bucket by bucket in its last backward pass
//   (forward_backward_pipelining_without_interleaving's cooldown, grad_sync_first_stage; a
//   single stage runs forward_backward_no_pipelining, whose last micro-batch runs outside
//   no_sync), the other stages after the schedule ("Launch any remaining grad reductions");
//   with interleaving, a chunk's buckets all at once after the backward pass `stage` passes
//   after the chunk's last one (backward_step_helper_postprocess), those left after the
//   schedule. The optimizer step waits for every reduction (finish_grad_sync).
// - Parameters (distributed optimizer and --overlap-param-gather). Without interleaving
//   (where Megatron-LM turns --align-param-gather off), the forward pre-hook of the first
//   forward pass that uses a bucket dispatches its all-gather if nobody has, waits for it, and
//   dispatches the next bucket's (DistributedDataParallel._make_forward_pre_hook,
//   _ParamAndGradBucketGroup.finish_param_sync). With interleaving, chunks 0 and 1 are
//   gathered at the start of the schedule and chunk k + 1 before the forward pass `stage`
//   passes before chunk k's first (forward_step_helper_preprocess); the pre-hooks only wait.
//   The all-gathers of step n's parameters run in step n + 1.
//
// A dispatch from the compute stream makes the communication stream wait for everything the
// compute stream has been given so far, as PyTorch's NCCL process group does. A pure plan: the
// CUDA stage runner issues each step when it reaches the step's point.
#ifndef PARATUNE_WORKER_PROBE_OVERLAP_PLAN_H_
#define PARATUNE_WORKER_PROBE_OVERLAP_PLAN_H_

#include <cstdint>
#include <vector>

#include "worker/probe/parameter_layout.h"
#include "worker/probe/pipeline_schedule.h"
#include "worker/probe/rank_layout.h"
#include "worker/probe/shard_shapes.h"

namespace paratune {

// The data-parallel switches of Megatron-LM that shape the plan. overlap_param_gather
// requires distributed_optimizer, as in Megatron-LM.
struct OverlapOptions {
  bool distributed_optimizer = false;
  bool overlap_grad_reduce = false;
  bool overlap_param_gather = false;
};

// The computations of one model chunk that use parameters, in forward order: the embedding
// (stage 0's chunk 0), the transformer layers, the loss (final norm and LM head, the last
// stage's last chunk). Units are numbered over the stage, chunk after chunk: unit `first` is
// the chunk's embedding if it has one, else its first layer.
struct ChunkUnits {
  int64_t first = 0;
  bool embedding = false;
  int64_t layers = 0;
  bool loss = false;

  int64_t Embedding() const { return first; }
  int64_t Layer(int64_t layer_in_chunk) const {
    return first + (embedding ? 1 : 0) + layer_in_chunk;
  }
  int64_t Loss() const { return Layer(layers); }
  int64_t end() const { return Layer(layers) + (loss ? 1 : 0); }
};

// A contiguous range [start, end) of the stage's parameter (and gradient) buffer holding whole
// tensors of one chunk in one region, reduced over `group` (its partition's: the data x context
// group, or the expert data-parallel group for routed experts). With the distributed optimizer
// its length is a multiple of the partition's shard count and rank r of the group owns
// [start + r n, start + (r + 1) n), n = (end - start) / shard_count (OptimizerShardOf).
struct ParameterBucket {
  int64_t chunk = 0;
  RankGroup group = RankGroup::kDataContext;
  int64_t start = 0;
  int64_t end = 0;
  // The units whose parameters it holds: the backward pass completes it with first_unit's
  // backward and the forward pass first needs it at first_unit's forward.
  int64_t first_unit = 0;
  int64_t last_unit = 0;
};

// The part of a bucket one rank of the data x context group updates in the optimizer step:
// elements [first, first + count) of the parameter buffers, whose fp32 master weights and
// Adam moments sit from element `state` of the optimizer buffers.
struct OptimizerShard {
  int64_t first = 0;
  int64_t count = 0;
  int64_t state = 0;
};

// The shard of `bucket` that rank `group_rank` of its group updates, the bucket lying in
// `partition` (ParameterLayout::PartitionOf) of shard_count shards (the group's size with the
// distributed optimizer, 1 without). With several shards, rank r's own: n = (end - start) /
// shard_count elements from start + r n, states from state_start + (start - partition start) /
// shard_count (requires 0 <= group_rank < shard_count). With one shard, the whole bucket from
// states at the same place, for every rank of the group: without the distributed optimizer
// each data-parallel rank steps all of its stage's parameters.
OptimizerShard OptimizerShardOf(const ParameterBucket& bucket, const ParameterPartition& partition,
                                int64_t group_rank);

// Where in a step the stage runner issues plan steps. `pass` indexes the schedule's passes in
// order (the steps that have one), `unit` a unit of that pass's chunk.
enum class PlanPointKind {
  kStepStart,      // after the gradients are zeroed, before the schedule
  kBeforePass,     // before pass `pass`, its transfers posted
  kBeforeForward,  // before unit `unit`'s forward in pass `pass`
  kAfterBackward,  // after unit `unit`'s backward in pass `pass`
  kAfterPass,      // after pass `pass`
  kStepEnd,        // after the schedule, before the optimizer
};

struct PlanPoint {
  PlanPointKind kind = PlanPointKind::kStepStart;
  int64_t pass = 0;
  int64_t unit = 0;
  bool operator==(const PlanPoint& other) const {
    return kind == other.kind && pass == other.pass && unit == other.unit;
  }
};

// The point a runner reaches at `kind` during pass `pass` (the passes run so far at the step's
// end) and unit `unit`: the step's start and end belong to no pass, and their points carry
// pass 0 as the plan's steps do.
PlanPoint PlanPointOf(PlanPointKind kind, int64_t pass, int64_t unit);

enum class PlanOperation {
  // Communication stream: wait for the compute stream's work so far, then all-gather the
  // bucket's parameters from their shards.
  kDispatchGather,
  // Compute stream: wait for the bucket's all-gather.
  kWaitGather,
  // Communication stream: wait for the compute stream's work so far, then reduce-scatter the
  // bucket's gradients (all-reduce without the distributed optimizer).
  kDispatchReduce,
  // Compute stream: wait for every reduction dispatched (`bucket` unused).
  kWaitReductions,
};

struct PlanStep {
  PlanPoint point;
  PlanOperation operation = PlanOperation::kDispatchReduce;
  int64_t bucket = 0;
};

struct DataParallelPlan {
  std::vector<ChunkUnits> chunks;
  // By chunk, each chunk's in buffer order (highest addresses, its last units, first).
  std::vector<ParameterBucket> buckets;
  // In the order the stage runner reaches their points; steps at one point in issue order.
  std::vector<PlanStep> steps;
};

// The units of each chunk of `stage_layers`.
std::vector<ChunkUnits> ChunkUnitsOf(const StageLayers& stage_layers);

// One bucket per region of `parameters` (its units left 0), in buffer order: what the stage
// reduces and gathers when nothing overlaps, as Megatron-LM reduces each model chunk's buffer
// of each weight dtype whole without --overlap-grad-reduce (bucket_size None:
// distributed_data_parallel.py, DistributedDataParallel.__init__).
std::vector<ParameterBucket> RegionBuckets(const ParameterLayout& parameters);

// One bucket per unit of `stage_layers` (ChunkUnitsOf), in buffer order, first_unit and
// last_unit the unit: what a stage reduce-scatters unit by unit under sharded gradients and
// gathers unit by unit under sharded weights, as Megatron-FSDP (megatron/core/distributed/fsdp
// at core_v0.19.0) and PyTorch's FSDP2 shard each unit's flat parameters on their own, so
// that a unit's gradients reduce-scatter and its weights gather once its backward is done or
// before its forward. A unit's range runs from its first tensor to the next unit's (the
// buffer's padded end for the last), a multiple of the partition's tensor_alignment: rank r's
// shard of it is its r-th slice (OptimizerShardOf). Requires `parameters` of one region per
// chunk (bf16 weights, a dense model) and no embedding tied to an LM head on the same stage
// (a tensor of two units); `stages` tells whether a tied embedding spans stages.
std::vector<ParameterBucket> UnitBuckets(const ParameterLayout& parameters,
                                         const StageLayers& stage_layers, bool tied_embeddings,
                                         int64_t stages);

// Which groups' buckets are reduced and gathered. The probe has no communicator for a group of
// one rank (worker/cuda/communicators.h), so a mixture-of-experts stage whose data x context
// group or expert data-parallel group has one rank reduces only the other group's buckets.
struct ReducedGroups {
  bool data_context = true;
  bool expert_data = true;

  bool Reduces(const ParameterBucket& bucket) const {
    return bucket.group == RankGroup::kExpertData ? expert_data : data_context;
  }
};

// The plan of pipeline stage `stage` of `stages` running `schedule` (PipelineScheduleOf) over
// `parameters` (LayoutParameters of `stage_layers` with `tied_embeddings` and shard count
// data_context_size with the distributed optimizer, 1 without). Requires data_context_size >=
// 1 (the probe plans only for more than one rank; a group of one is legal for NCCL) and
// overlap_grad_reduce or overlap_param_gather (the stage runner reduces after the schedule,
// on one stream, otherwise). Every bucket of a group in `groups` is reduced once and, with
// overlap_param_gather, gathered once; the buckets tile [0, parameters.padded_elements).
DataParallelPlan DataParallelPlanOf(const ParameterLayout& parameters,
                                    const StageLayers& stage_layers, bool tied_embeddings,
                                    const std::vector<ScheduleStep>& schedule, int64_t stage,
                                    int64_t stages, int64_t data_context_size,
                                    const OverlapOptions& options, const ReducedGroups& groups);

}  // namespace paratune

#endif  // PARATUNE_WORKER_PROBE_OVERLAP_PLAN_H_
