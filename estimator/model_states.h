// The model states of a replica's parameters on one GPU (weights, gradients, optimizer states)
// under each data-parallel sharding and framework: DESIGN.md §5.2's 2 + 4 + 12/d bytes per
// parameter generalised to the ZeRO stages (Rajbhandari et al. 2020, arXiv 1910.02054).
#ifndef PARATUNE_ESTIMATOR_MODEL_STATES_H_
#define PARATUNE_ESTIMATOR_MODEL_STATES_H_

#include "estimator/data_parallel_sharding.h"
#include "estimator/training_spec.h"

namespace paratune {

// Weights, gradients and optimizer states of one kind of parameter on one GPU, in bytes.
struct ModelStateBytes {
  double weights = 0;
  double gradients = 0;
  double optimizer_states = 0;

  double Total() const { return weights + gradients + optimizer_states; }
};

// `params` parameters (already split over tensor, pipeline and expert parallelism) sharded by
// `sharding` over `shard_ranks` ranks (DataParallelShardRanks x cp, or the expert data-parallel
// group for experts), with `weight_bytes` the bytes per parameter of the weight Megatron-LM
// computes with (2, bf16; 1 for fp8_param_gather's fp8 linears). Per parameter:
// - Megatron-LM: the weight as stored, gradients 4 (fp32 main grads; 2 with fp32_gradients
//   off), Adam's fp32 master weights and two moments 12 (Fujii et al. 2024; Megatron-LM's
//   theoretical_memory_usage.py: 6 + 12 / dp bytes); kOptimizer shards the 12, kGradients the
//   gradients too, kFull the weights too (Megatron-FSDP's optim, optim_grads and
//   optim_grads_params, megatron/core/distributed/fsdp at core_v0.19.0).
// - TorchTitan: FSDP2 keeps the parameters themselves in fp32 and all-gathers them cast to bf16
//   (MixedPrecisionPolicy(param_dtype=bfloat16, reduce_dtype=float32),
//   torchtitan/models/llama3/infra/parallelize.py), so weights 4, gradients 4 and AdamW's two
//   moments 8, all three sharded under every mode but kNone (FSDP2 always shards parameters in
//   storage; kGradients differs from kFull in the gathered weights it keeps,
//   GatheredWeightBytes).
ModelStateBytes ShardedModelStates(const TrainingSpec& training, DataParallelSharding sharding,
                                   double params, double weight_bytes, double shard_ranks);

// Bytes of bf16 weights held gathered beyond ShardedModelStates at the step's peak, on one GPU:
// - kGradients under TorchTitan, and kFull under TorchTitan with pipeline parallelism
//   (`pipelined`), where TorchTitan turns resharding after forward off "to avoid
//   per-microbatch all-gathers" (torchtitan/parallelisms/parallelize_llama.py, apply_fsdp:
//   reshard_after_forward False when pp is enabled): every unit keeps its gathered weights
//   from its forward to its backward, 2 x `stage_params`;
// - kFull otherwise (either framework): the unit whose forward or backward runs and the next
//   one, prefetched while it runs (FSDP2's implicit prefetch of one unit; Megatron-FSDP's
//   all-gather of the next bucket), 2 x 2 x `largest_unit_params` (a layer, the embedding or
//   the LM head, whichever is largest on the stage);
// - else 0: the weights are whole already (ShardedModelStates) or, under Megatron-FSDP's
//   optim_grads, never gathered.
double GatheredWeightBytes(const TrainingSpec& training, DataParallelSharding sharding,
                           bool pipelined, double stage_params, double largest_unit_params);

// Bytes of unsharded gradients accumulated across a step's micro-batches beyond
// ShardedModelStates, on one GPU: under TorchTitan with pipeline parallelism and sharded
// gradients, PyTorch's pipeline schedule turns FSDP's gradient reduction and resharding off
// for all but the last micro-batch's backward (torch.distributed.pipelining, stage
// backward_maybe_with_nosync: set_requires_gradient_sync and set_reshard_after_backward
// False until last_backward), and FSDP2 accumulates the unsharded gradients in its reduce
// dtype (FSDPParam.to_accumulated_grad_if_needed upcasts them,
// torch/distributed/fsdp/_fully_shard/_fsdp_param.py), fp32 in TorchTitan
// (training.mixed_precision_reduce, default and only choice "float32" at 9dec370):
// 4 x `stage_params`; else 0.
double AccumulatedGradientBytes(const TrainingSpec& training, DataParallelSharding sharding,
                                bool pipelined, double stage_params);

// How often one step moves a stage's weights and gradients over the data-parallel group, as
// the terms above hold them: all-gathers of the weights' shards and reductions of the
// gradients (an all-reduce without sharding, a reduce-scatter with it).
struct DataParallelTraffic {
  double weight_gathers = 0;
  double gradient_reductions = 0;
};

// The traffic of a step of `micro_batches` micro-batches:
// - kNone: one all-reduce of the gradients (Megatron-LM's buffers accumulate across
//   micro-batches; DDP's no_sync);
// - TorchTitan with pipeline parallelism and any sharding: one gather at the first forward and
//   one reduce-scatter at the last backward (AccumulatedGradientBytes);
// - TorchTitan's kGradients otherwise: the weights gathered before each micro-batch's forward
//   and kept to its backward (GatheredWeightBytes), the gradients reduce-scattered after it;
// - kFull otherwise: per micro-batch a gather before the forward and again before the backward
//   (resharded after the forward: FSDP2's reshard_after_forward, Megatron-FSDP's
//   optim_grads_params) and a reduce-scatter;
// - Megatron-LM's kGradients: a reduce-scatter of each micro-batch's gradients, since no rank
//   holds a whole gradient buffer to accumulate them in (ShardedModelStates), and one gather of
//   the updated weights (Megatron-FSDP's optim_grads; ZeRO-2's reduction per micro-batch);
// - Megatron-LM's kOptimizer: one reduce-scatter of the gradients accumulated in the full
//   buffer and one gather of the updated weights.
DataParallelTraffic DataParallelTrafficPerStep(const TrainingSpec& training,
                                               DataParallelSharding sharding, bool pipelined,
                                               double micro_batches);

}  // namespace paratune

#endif  // PARATUNE_ESTIMATOR_MODEL_STATES_H_
