// A stage's linear weights stored in fp8, as Megatron-LM's --fp8-param-gather keeps them
// (Transformer Engine's fp8_model_init makes the four linear weights of each layer
// Float8Tensors; delayed scaling, the recipe the export writes):
// - when the model is built, each weight is quantized from its initial bf16 values with its
//   scale (1, Transformer Engine's initial one), and the fp32 master weights start from those
//   bf16 values (Transformer Engine keeps them as the weight's high_precision_init_val for
//   that);
// - after each optimizer step the rank's shards of the master weights are cast into the fp8
//   weights, tensor by tensor (fp8_weight_ranges.h), through bf16 first (cast_master_weights_
//   to_fp8 rounds the master to the model's dtype "to keep numerical consistency" with bf16
//   weights) and with the weight's current scale, each cast recording the amax of the part it
//   saw; then the weights' amaxes are all-reduced (maximum) over the data x context group, the
//   group Megatron-LM's distributed optimizer passes, and every weight's scale inverse is set
//   to 1 / its scale (transformer_engine/pytorch/tensor/utils.py,
//   _cast_master_weights_to_fp8_delayed_scaling).
// The amaxes then join the next forward pass's reduction and scale update like any other
// (Fp8Linears::EndForward), the forward passes read the fp8 weights as they are (Fp8Linears
// only transposes them, once per step), and the data-parallel all-gathers move them in one
// byte per element (AllGatherParameters).
#ifndef PARATUNE_WORKER_CUDA_FP8_PARAMETERS_H_
#define PARATUNE_WORKER_CUDA_FP8_PARAMETERS_H_

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "worker/cuda/phase_timer.h"
#include "worker/probe/fp8_state_layout.h"
#include "worker/probe/fp8_weight_ranges.h"
#include "worker/probe/overlap_plan.h"
#include "worker/probe/parameter_layout.h"
#include "worker/probe/shard_shapes.h"

namespace paratune {

// The device buffers, borrowed (FootprintPlan's).
struct Fp8ParameterBuffers {
  char* weights = nullptr;        // ProbeBuffer::kWeights, ParameterLayout's bytes
  char* weight_copies = nullptr;  // kFp8WeightCopies: the transposes and scale inverses
  char* scaling_state = nullptr;  // kFp8ScalingState
  // kMasterWeights: the rank's fp32 master shards, each from its OptimizerShard::state.
  const float* master_weights = nullptr;
};

// Not thread-safe: one per rank, enqueuing on the rank's compute stream.
class Fp8Parameters {
 public:
  // `parameters` has fp8 regions and `state` fp8_parameters (LayoutParameters and
  // LayoutFp8State with fp8 parameters). `shards`: the optimizer shards the rank steps
  // (OptimizerShardOf of each of its buckets), whose fp8 weights' parts it casts.
  // `data_context` reduces the weights' amaxes: the data x context group where the probe runs
  // it, else nullptr. Everything but `shards` is borrowed.
  Fp8Parameters(const ShardShapes& shapes, const ParameterLayout& parameters,
                const Fp8StateLayout& state, const std::vector<OptimizerShard>& shards,
                const Fp8ParameterBuffers& buffers, ncclComm_t data_context, cudaStream_t stream,
                PhaseTimer* timer);
  Fp8Parameters(const Fp8Parameters&) = delete;
  Fp8Parameters& operator=(const Fp8Parameters&) = delete;

  // Quantizes every fp8 weight of the stage from `initial` (bf16 values indexed by element
  // offset, ParameterLayout) with its current scale, recording its amax and its scale
  // inverse. After Fp8Linears::Initialize (the scales then 1). INTERNAL as CudaStatus.
  absl::Status Initialize(const __nv_bfloat16* initial);

  // After the optimizer step has updated the master shards: casts their fp8 weights' parts,
  // reduces the amaxes and sets the scale inverses. INTERNAL as CudaStatus or NcclStatus.
  absl::Status CastMasterWeights();

 private:
  // One cast of the optimizer step: a part of an fp8 weight, where its master values start
  // in the master buffer and where its bytes start in the weights buffer.
  struct MasterCast {
    Fp8WeightRange range;
    int64_t master = 0;
    int64_t weight_byte = 0;
  };

  float* Scaling(int64_t offset, int64_t index = 0) const;

  const ShardShapes& shapes_;
  const ParameterLayout& parameters_;
  const Fp8StateLayout& state_;
  Fp8ParameterBuffers buffers_;
  ncclComm_t data_context_;
  cudaStream_t stream_;
  PhaseTimer* timer_;
  // The shards' casts, found once: the shards do not change between steps.
  std::vector<MasterCast> casts_;
};

}  // namespace paratune

#endif  // PARATUNE_WORKER_CUDA_FP8_PARAMETERS_H_
