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
// gradients, PyTorch's pipeline schedule turns FSDP's gradient reduction off for all but the
// last micro-batch's backward (torch.distributed.pipelining, stage backward_maybe_with_nosync:
// set_requires_gradient_sync(last_backward)), so the stage's unsharded gradients accumulate in
// the parameters' bf16, 2 x `stage_params`; else 0.
double AccumulatedGradientBytes(const TrainingSpec& training, DataParallelSharding sharding,
                                bool pipelined, double stage_params);

}  // namespace paratune

#endif  // PARATUNE_ESTIMATOR_MODEL_STATES_H_
