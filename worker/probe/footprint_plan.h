// The device memory one rank of a probe allocates: the memory model's terms for its pipeline
// stage, each allocated at least as large as estimated (DESIGN.md §8: the probe allocates
// the configuration's real footprint, so an allocation failure is a measured out-of-memory),
// and where inside them the probe's buffers live. A term the probe needs more of than the
// model estimates is allocated at the larger size and reported so; transient buffers the
// model has no term for form the probe_workspace term.
#ifndef PARATUNE_WORKER_PROBE_FOOTPRINT_PLAN_H_
#define PARATUNE_WORKER_PROBE_FOOTPRINT_PLAN_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "estimator/cluster_spec.h"
#include "estimator/memory_model.h"
#include "estimator/model_spec.h"
#include "estimator/parallel_config.h"
#include "estimator/training_spec.h"
#include "worker/probe/activation_layout.h"
#include "worker/probe/fp8_state_layout.h"
#include "worker/probe/moe_shard_shapes.h"
#include "worker/probe/parameter_layout.h"
#include "worker/probe/probe_spec.h"
#include "worker/probe/shard_shapes.h"

namespace paratune {

// Every buffer of the probe, grouped by the term that holds it.
enum class ProbeBuffer {
  // weights: the stage's parameters (ParameterLayout::weight_bytes): bf16, the linear weights
  // E4M3 with fp8 parameters (training.fp8_param_gather); under sharded weights (dp_sharding
  // full) the rank's bf16 shard of them alone, in the optimizer states' layout
  // (OptimizerShard::state).
  kWeights,
  // gradients: fp32 (or bf16) gradients in the same layout; under sharded gradients
  // (dp_sharding gradients or full) the rank's shard of them alone, in the optimizer states'
  // layout (OptimizerShard::state).
  kGradients,
  // gradient_buckets, under sharded gradients only: the unsharded gradients of the one unit
  // (UnitBuckets) whose backward runs, the largest unit's size, reduce-scattered into
  // kGradients after its backward.
  kGradientStaging,
  // optimizer_states: fp32 master weights and Adam's two moments of this rank's shard.
  kMasterWeights,
  kAdamFirstMoment,
  kAdamSecondMoment,
  // activations: activation_slots slots of one model chunk's kept tensors each, and under
  // full recomputation one layer's whole block, rebuilt before its backward.
  kActivationSlots,
  kRecomputeWorkspace,
  // output_activations: loss_slots LossActivationLayout blocks.
  kLossSlots,
  // pipeline_buffers: the activation a stage sends and the gradient it receives (it receives
  // activations straight into an activation slot and sends gradients from
  // kResidualGradient).
  kPipelineSendActivation,
  kPipelineReceiveGradient,
  // fp8_weight_copies and fp8_scaling_state (fp8 training only): Fp8StateLayout's buffers.
  kFp8WeightCopies,
  kFp8ScalingState,
  // moe_dispatcher_buffers (a mixture-of-experts model's; empty otherwise): the all-to-all
  // dispatcher's tokens of the one MoE layer running, as moe_memory.h's AllToAllBufferBytes
  // counts them (MoeShardShapes: S copies a rank sends, N its experts compute).
  kMoePermutedTokens,         // [S, h] bf16: the permuted copies the dispatch sends; the
                              // combine's input (after the etp reduce-scatter)
  kMoePermutedProbabilities,  // [S] fp32: their routing probabilities
  // [N, h] bf16 with more than one local expert: the copies received (and gathered over etp)
  // in source order, before the sort by local expert into the kept expert input, and the sort
  // back of the experts' output; [S, h] with one local expert and etp > 1 (the copies received,
  // gathered straight into the expert input); empty with one local expert and etp 1 (received
  // straight into it).
  kMoeReceivedTokens,
  kMoeReceivedProbabilities,  // fp32, a value per copy of kMoeReceivedTokens
  kMoeExpertOutput,           // [N, h] bf16: fc2's output, by local expert
  kMoeCombinedTokens,         // [S, h] bf16: the copies the combine brings back
  // gathered_weights, under sharded weights only: kGatheredWeightSlots slots of the largest
  // unit's bf16 weights (UnitBuckets), each holding one unit's weights all-gathered from the
  // shards while its forward or backward runs, or prefetched for the next (weight_gather_plan.h).
  kGatheredWeights,
  // probe_workspace: transient buffers.
  kGemmWorkspace,            // cuBLASLt's workspace
  kTokens,                   // [T] int32 token ids of a micro-batch
  kLabels,                   // [T] int32 next-token labels
  kGathered,                 // [T, h] bf16: a TP all-gather's output
  kQkvProjection,            // [T, (a/t + 2 kv) d] bf16: the QKV GEMM's output
  kAttentionHeads,           // [T, a/t, d] bf16, query-head layout: attention output or its
                             // gradient
  kQueryGradient,            // [T, a/t, d] bf16, query-head layout
  kAttentionScores,          // fp32 scores (and their gradients) of one query chunk, or
                             // cuDNN's fused attention workspace (AttentionScoresBytes)
  kAttentionProbabilities,   // bf16 probabilities (and score gradients) of one query chunk
  kKeyValueGathered,         // [c, 2, b, kv, s/c, d] bf16: all context ranks' K and V, or
                             // with cp_comm_type p2p the ring's received blocks
                             // ([RingKeyValueSlots(c), ...], context_parallel_ring.h)
  kKeyValueGradients,        // [c, 2, b, kv, s/c, d] fp32: gradients of all of them, or the
                             // ring's [kRingGradientSlots, ...]
  kAttentionRowSums,         // [T, a/t] fp32: rowsum(dO * O) for the softmax backward
  kProjectionOutput,         // [T, h] bf16: a row-parallel GEMM's partial sums
  kReduced,                  // [R, h] bf16: a TP reduce-scatter's output
  kResidualGradient,         // [R, h] bf16: the gradient of the residual stream
  kMlpGradient,              // [T, 2 f/t] bf16 (2 n_s f_s / t where the shared experts are wider)
  kSwigluGradient,           // [T, f/t] bf16 (n_s f_s / t where wider)
  kQkvGradient,              // [T, (a/t + 2 kv) d] bf16
  kAttentionOutputGradient,  // [T, a/t d] bf16
  kLogitsGradient,           // [T, ceil(V/t)] bf16
  kLossStatistics,           // [3, T] fp32: row maximum, sum of exponentials, loss
  // A mixture-of-experts model's only (empty otherwise), the MoE block's backward:
  kMoeExpertGateUpGradient,  // [N, 2 f_e / etp] bf16: the weighted SwiGLU's input gradient
  kMoeExpertSwigluGradient,  // [N, f_e / etp] bf16: fc2's input gradient
  kMoeRouterLogitsGradient,  // [R, E] bf16
  kMoeProbabilityGradient,   // [max(N, R k)] fp32: the routing probabilities' gradients, the
                             // experts' copies' and the rank's
  // fp8 training only (empty in bf16):
  kLinearInput,                  // [T, max(h, f/t)] bf16: a norm's or SwiGLU's output,
                                 // which the layer keeps in fp8 alone, before its cast
  kFp8Input,                     // [T, max(h, a/t d, f/t)] E4M3: a linear's input as its
                                 // GEMMs read it (cast, or all-gathered)
  kFp8InputTransposed,           // [h, T] E4M3, with sequence parallelism: the transpose of
                                 // a gathered norm output, for the weight gradient
  kFp8OutputGradient,            // [T, max outputs] E5M2: a linear's output gradient
  kFp8OutputGradientTransposed,  // [max outputs, T] E5M2: its transpose
  kCount,
};

// The buffer's name in snake case ("activation_slots"), for step plans and errors.
const char* ProbeBufferName(ProbeBuffer buffer);

// One term of the footprint.
struct TermAllocation {
  // MemoryTermName, or "probe_workspace".
  std::string name;
  // The memory model's bytes (0 for probe_workspace).
  int64_t estimated_bytes = 0;
  // Bytes the probe allocates for the term: max(estimate, what its buffers need); 0 for
  // cuda_context and nccl_buffers, which the CUDA runtime and NCCL allocate themselves.
  int64_t allocated_bytes = 0;
  // The bytes the probe's buffers in the term take, <= allocated_bytes; the rest is
  // allocated and left unused, because the model counts it (e.g. the embedding output
  // Megatron keeps, which the probe does not need).
  int64_t needed_bytes = 0;
};

// Where a buffer lives: in the allocation of terms()[term], at `offset`.
struct BufferPlacement {
  int term = -1;
  int64_t offset = 0;
  int64_t bytes = 0;
};

// Byte budget of kAttentionScores plus kAttentionProbabilities: attention is computed one
// chunk of queries at a time against all the keys they see (docs/probe.md).
inline constexpr int64_t kAttentionWorkspaceBytes = int64_t{384} << 20;
// cuBLASLt's workspace; NVIDIA recommends 32 MiB on Hopper.
inline constexpr int64_t kGemmWorkspaceBytes = int64_t{32} << 20;
// Room for cuDNN's own workspace of the fused attention backward, beyond the tensors placed
// in it (FusedBackwardGradientBytes and the graph's workspace tensors): cuDNN says what a
// plan needs only once it built the plan on the GPU. On an H200 (cuDNN 9 of PyTorch's
// nvidia-cudnn-cu13 wheel) the plan cuDNN ranks first for Llama-3.1-8B's backward at s 8192
// asked for 128 MiB + 256 bytes of its own beyond the graph's tensors (which hold dQ_accum
// already): as much as an fp32 dQ, b s/c (a/t) d floats; its second plan twice that
// (docs/probe.md, "First run"). So the room is an fp32 dQ's bytes plus
// kAttentionPlanSlackBytes; a plan that needs more falls back to the chunked backward and
// says so in ProbeMeasurements.attention_backward_fallback_reason.
inline constexpr int64_t kAttentionPlanSlackBytes = int64_t{32} << 20;
int64_t AttentionPlanWorkspaceBytes(const ShardShapes& shapes);

// Bytes of kAttentionScores for `shapes` with context parallelism's `exchange`: one query
// chunk's fp32 scores, or, when more, what the fused attention backward needs in its
// workspace (attention_graph.h), since the buffer is cuDNN's workspace too
// (Attention::SelectKernel). With the p2p ring, what its diagonal product's backward needs,
// the most of its products (n queries); with all_gather (cp > 1) the position-ordered keys
// and values (AllGatherKeyValueBytes) before a query half's backward workspace.
int64_t AttentionScoresBytes(const ShardShapes& shapes, CpCommType exchange);

class FootprintPlan {
 public:
  // The plan of a rank on pipeline stage `stage` running `micro_batches` micro-batches per
  // step; the estimate is EstimateMemory with `memory_options`: stage 0's, the last stage's,
  // or for the stages in between stage 1's, which bounds them all. A mixture-of-experts model
  // requires shapes ComputeMoeShardShapes accepts (CheckCudaProbeRuns checks them).
  static FootprintPlan Create(const ModelSpec& model, const TrainingSpec& training,
                              const ClusterSpec& cluster, const ParallelConfig& config,
                              const MemoryOptions& memory_options, int64_t stage);
  // What the probe allocates for pipeline stage `stage` of `spec`: Create with MemoryOptions().
  static FootprintPlan OfStage(const ProbeSpec& spec, int64_t stage);

  const std::vector<TermAllocation>& terms() const { return terms_; }
  const BufferPlacement& placement(ProbeBuffer buffer) const {
    return placements_[static_cast<int>(buffer)];
  }
  // The memory model's total for the stage.
  double estimated_bytes() const { return estimated_bytes_; }

  const ShardShapes& shapes() const { return shapes_; }
  // A mixture-of-experts model's MoE block (all zeros for a dense model).
  const MoeShardShapes& moe() const { return moe_; }
  const StageLayers& stage_layers() const { return stage_layers_; }
  const ParameterLayout& parameters() const { return parameters_; }
  // A dense layer's block, and a mixture-of-experts layer's (empty for a dense model).
  const LayerActivationLayout& layer_activations() const { return layer_activations_; }
  const LayerActivationLayout& moe_layer_activations() const { return moe_layer_activations_; }
  // The MoE block inside an MoE layer's, from its moe_block offset.
  const MoeBlockActivationLayout& moe_block_activations() const { return moe_block_activations_; }
  // The block of the stage's layer `stage_layer` (ParameterLayout::layers' index).
  const LayerActivationLayout& LayerActivationsOf(int64_t stage_layer) const {
    return stage_layers_.moe_layers.empty() || !stage_layers_.moe_layers[stage_layer]
               ? layer_activations_
               : moe_layer_activations_;
  }
  const LossActivationLayout& loss_activations() const { return loss_activations_; }
  // Whether the stage trains in fp8 (training.fp8), and then its fp8 state, for the recipe
  // the probe runs (kExportedFp8Recipe); empty in bf16.
  bool fp8() const { return layer_activations_.fp8; }
  const Fp8StateLayout& fp8_state() const { return fp8_state_; }

  // Activation slots: one per model chunk whose backward is pending (the schedule's most).
  int64_t activation_slots() const { return activation_slots_; }
  // Bytes of one slot: the most any chunk's layers keep, each layer its whole block
  // (LayerActivationsOf), or its input alone under full recomputation.
  int64_t slot_bytes() const { return slot_bytes_; }
  // Where the stage's layer `stage_layer` keeps its block (or input) in a slot: after the
  // earlier layers of its chunk.
  int64_t LayerSlotOffset(int64_t stage_layer) const { return slot_layer_offsets_[stage_layer]; }
  bool full_recompute() const { return full_recompute_; }
  // Whether the gradients are sharded (dp_sharding gradients or full): kGradients holds the
  // rank's shard, kGradientStaging one unit's whole.
  bool sharded_gradients() const { return sharded_gradients_; }
  // Whether the weights are sharded (dp_sharding full): kWeights holds the rank's shard,
  // kGatheredWeights the gathered units, gathered_weight_slot_bytes() each.
  bool sharded_weights() const { return sharded_weights_; }
  int64_t gathered_weight_slot_bytes() const { return gathered_weight_slot_bytes_; }
  // Loss slots: the last stage's pending loss chunks (usually 1).
  int64_t loss_slots() const { return loss_slots_; }
  // Queries per attention chunk (query-token rows of one sequence).
  int64_t attention_query_chunk() const { return attention_query_chunk_; }
  // Whether context parallelism runs the ring (cp > 1 with cp_comm_type p2p): kKeyValueGathered
  // and kKeyValueGradients then hold the ring's slots, not every rank's blocks.
  bool context_parallel_ring() const { return context_parallel_ring_; }

 private:
  FootprintPlan(ShardShapes shapes, StageLayers stage_layers)
      : shapes_(shapes), stage_layers_(std::move(stage_layers)) {}

  ShardShapes shapes_;
  MoeShardShapes moe_;
  StageLayers stage_layers_;
  ParameterLayout parameters_;
  LayerActivationLayout layer_activations_;
  LayerActivationLayout moe_layer_activations_;
  MoeBlockActivationLayout moe_block_activations_;
  LossActivationLayout loss_activations_;
  Fp8StateLayout fp8_state_;
  std::vector<TermAllocation> terms_;
  std::array<BufferPlacement, static_cast<int>(ProbeBuffer::kCount)> placements_{};
  double estimated_bytes_ = 0;
  int64_t activation_slots_ = 0;
  int64_t slot_bytes_ = 0;
  std::vector<int64_t> slot_layer_offsets_;
  bool full_recompute_ = false;
  bool sharded_gradients_ = false;
  bool sharded_weights_ = false;
  int64_t gathered_weight_slot_bytes_ = 0;
  int64_t loss_slots_ = 0;
  int64_t attention_query_chunk_ = 0;
  bool context_parallel_ring_ = false;
};

}  // namespace paratune

#endif  // PARATUNE_WORKER_PROBE_FOOTPRINT_PLAN_H_
