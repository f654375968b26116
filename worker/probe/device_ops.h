// What one rank's training step asks of its GPU, as the calls StageRunner (stage_runner.h)
// makes: kernels, GEMMs, collectives, and the fp8, tensor-parallel-overlap, attention and
// data-parallel components that run several of those at once. Every operand is a DeviceRef,
// a place in the probe's memory (FootprintPlan's buffers), never a pointer: StageRunner decides
// every shape, buffer, path and order without CUDA, so that CPU tests run it. Two
// implementations: worker/cuda/cuda_device_ops.h enqueues the calls on the device (the only
// code of the step that calls CUDA, cuBLASLt, cuDNN or NCCL), recording_device_ops.h records
// them as the step plan's ops (step_plan.h).
#ifndef PARATUNE_WORKER_PROBE_DEVICE_OPS_H_
#define PARATUNE_WORKER_PROBE_DEVICE_OPS_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "worker/probe/footprint_plan.h"
#include "worker/probe/fp8_state_layout.h"
#include "worker/probe/overlap_plan.h"
#include "worker/probe/pipeline_schedule.h"
#include "worker/probe/step_ops.h"

namespace paratune {

// A place in the probe's device memory: `offset` bytes into `buffer`.
struct DeviceRef {
  ProbeBuffer buffer = ProbeBuffer::kWeights;
  int64_t offset = 0;
  DeviceRef At(int64_t bytes) const { return {buffer, offset + bytes}; }
};

// One GEMM of a linear layer (gemm.h LinearForward, LinearInputGradient, LinearWeightGradient),
// with `tokens` rows of activations and a weight [outputs, inputs]:
// forward:         c [tokens, outputs]  = a [tokens, inputs] b^T    (a: input, b: weight);
// input gradient:  c [tokens, inputs]   = a [tokens, outputs] b     (a: d_out, b: weight);
// weight gradient: c [outputs, inputs] += a^T b, a [tokens, outputs] (a: d_out, b: input).
// `float_output`: c is fp32 (the LM head's logits; a weight gradient into fp32 gradients),
// else bf16.
struct LinearProduct {
  LinearWeight weight = LinearWeight::kQkv;
  GemmRole role = GemmRole::kForward;
  DeviceRef a;
  DeviceRef b;
  DeviceRef c;
  int64_t tokens = 0;
  int64_t outputs = 0;
  int64_t inputs = 0;
  bool float_output = false;
};

// One linear of one layer of a model chunk in fp8 training (fp8_linear.h Fp8LinearSite): its
// weight's bytes, and where its forward pass keeps its input's fp8 copy and that copy's scale
// inverse.
struct Fp8Site {
  int64_t chunk = 0;
  int64_t layer_in_chunk = 0;
  Fp8Linear linear = Fp8Linear::kQkv;
  DeviceRef weight;
  DeviceRef kept;
  DeviceRef kept_scale_inverse;
};

// What a layer's attention keeps for its backward pass (attention.h AttentionBuffers; the
// transient buffers are the footprint's own).
struct AttentionKept {
  DeviceRef query;
  DeviceRef key_value;
  DeviceRef softmax_lse;
};

// One side of a pipeline transfer: the schedule's transfer and the boundary tensor's place
// ([R, h] bf16, PipelineBoundaryBytes).
struct PipelineTransfer {
  Transfer transfer;
  DeviceRef buffer;
};

// One bucket's Adam update over the rank's shard of it (optimizer_kernels.h AdamStep): the
// gradients, fp32 master weights and moments of `shard.count` elements; `weights`, when
// set, receives the updated bf16 weights (an fp8 region's are cast from the master weights
// by CastMasterWeights instead).
struct AdamUpdate {
  int64_t bucket = 0;
  OptimizerShard shard;
  int64_t step = 0;
  DeviceRef gradients;
  DeviceRef master_weights;
  DeviceRef first_moment;
  DeviceRef second_moment;
  bool update_weights = true;
  DeviceRef weights;
};

// One gather of a unit's weights into a gathered-weight slot (weight_gather_plan.h): the unit's
// bucket (OptimizerLayout::buckets) and the slot.
struct WeightGather {
  int64_t bucket = 0;
  int64_t slot = 0;
};

// Unless stated otherwise a call's activations are the rank's residual rows [R, h] bf16
// (ShardShapes::residual_tokens), its GEMM inputs [T, ...] (ShardShapes::tokens), and a
// weight gradient is accumulated in the gradients' type (fp32 or bf16). Each returns the
// device's error (INTERNAL from CUDA, NCCL, cuBLASLt or cuDNN), or OK.
class DeviceOps {
 public:
  virtual ~DeviceOps() = default;

  // Where the calls that follow belong in the step (the recording's context; the device
  // ignores it).
  virtual void SetContext(const StepOpContext& context) = 0;

  // The step's start: the gradients zeroed, and in fp8 each chunk's weights to be cast again.
  virtual absl::Status ZeroGradients() = 0;
  virtual absl::Status StartFp8Step() = 0;

  // One step of the data-parallel plan (overlap_plan.h), on the communication stream.
  virtual absl::Status IssueDataParallel(const PlanStep& step) = 0;
  // Pipeline sends and receives posted together (one NCCL group).
  virtual absl::Status SendReceive(const std::vector<PipelineTransfer>& transfers) = 0;
  // Rows [R, h] copied (`what`: why, for the recording).
  virtual absl::Status CopyRows(DeviceRef from, DeviceRef to, std::string_view what) = 0;

  // Tensor-parallel collectives on the compute stream: rows [R, h] gathered into [T, h];
  // partial sums [T, h] reduce-scattered into rows [R, h], or all-reduced in place.
  virtual absl::Status TensorAllGather(DeviceRef rows, DeviceRef gathered,
                                       std::string_view what) = 0;
  virtual absl::Status TensorReduceScatter(DeviceRef partial, DeviceRef reduced,
                                           std::string_view what) = 0;
  virtual absl::Status TensorAllReduce(DeviceRef partial, std::string_view what) = 0;

  // The vocabulary-parallel embedding's lookup of this rank's rows into `partial` [T, h]
  // (the rest zeros), and its backward from the gathered output gradient [T, h].
  virtual absl::Status EmbeddingForward(DeviceRef weight, DeviceRef partial) = 0;
  virtual absl::Status EmbeddingBackward(DeviceRef output_gradient, DeviceRef weight_gradient) = 0;

  // RMSNorm of rows x [R, h]: out and the rows' rstd [R] fp32; its weight's gradient; x's
  // gradient d_x (plus `residual` when given).
  virtual absl::Status RmsNormForward(DeviceRef x, DeviceRef weight, DeviceRef out,
                                      DeviceRef rstd) = 0;
  virtual absl::Status RmsNormWeightGradient(DeviceRef x, DeviceRef rstd, DeviceRef d_out,
                                             DeviceRef weight_gradient) = 0;
  virtual absl::Status RmsNormBackward(DeviceRef x, DeviceRef weight, DeviceRef rstd,
                                       DeviceRef d_out, const DeviceRef* residual,
                                       DeviceRef d_x) = 0;
  // out = a + b, rows [R, h].
  virtual absl::Status AddRows(DeviceRef a, DeviceRef b, DeviceRef out) = 0;
  // SwiGLU of gate_up [T, 2 ffn] into [T, ffn], and its backward; ffn: the MLP's inner width
  // per rank, a dense layer's f / t or the shared experts' n_s f_s / t.
  virtual absl::Status SwigluForward(DeviceRef gate_up, DeviceRef out, int64_t ffn) = 0;
  virtual absl::Status SwigluBackward(DeviceRef gate_up, DeviceRef d_out, DeviceRef d_gate_up,
                                      int64_t ffn) = 0;

  // A bf16 GEMM on the compute stream.
  virtual absl::Status Gemm(const LinearProduct& product) = 0;
  // Tensor-parallel communication overlap (tensor_parallel_overlap.h): the ring all-gather of
  // rows `own` [R, columns] into the product's A beside its chunks (`keep_own`: A ends whole);
  // the forward GEMM in column chunks, each reduce-scattered into `reduced` and placed in
  // rows `out`; the bulk backward of a column-parallel linear, `own` rows gathered into
  // `gathered` beside the input gradient, whose [T, h] output is reduce-scattered into
  // `reduced` beside the weight gradient.
  virtual absl::Status AllGatherGemm(const LinearProduct& product, DeviceRef own,
                                     bool keep_own) = 0;
  virtual absl::Status GemmReduceScatter(const LinearProduct& product, DeviceRef reduced,
                                         DeviceRef out) = 0;
  virtual absl::Status BulkBackward(DeviceRef own, DeviceRef gathered,
                                    const LinearProduct& input_gradient,
                                    const LinearProduct& weight_gradient, DeviceRef reduced) = 0;

  // A layer's linears in fp8 training (fp8_linear.h Fp8Linears, same names and operands).
  virtual absl::Status Fp8ColumnForward(const Fp8Site& site, DeviceRef normed, DeviceRef out) = 0;
  virtual absl::Status Fp8RowForward(const Fp8Site& site, DeviceRef in, DeviceRef partial) = 0;
  virtual absl::Status Fp8RowForwardOverlapped(const Fp8Site& site, DeviceRef in, DeviceRef partial,
                                               DeviceRef reduced, DeviceRef out) = 0;
  virtual absl::Status Fp8Backward(const Fp8Site& site, DeviceRef d_out, DeviceRef d_in,
                                   DeviceRef weight_gradient) = 0;
  virtual absl::Status Fp8ColumnBackwardOverlapped(const Fp8Site& site, DeviceRef d_out,
                                                   DeviceRef partial, DeviceRef reduced,
                                                   DeviceRef weight_gradient) = 0;
  virtual absl::Status Fp8RowBackwardOverlapped(const Fp8Site& site, DeviceRef d_out,
                                                DeviceRef d_in, DeviceRef weight_gradient) = 0;
  virtual absl::Status Fp8RowBackwardSequenceParallel(const Fp8Site& site, DeviceRef d_out,
                                                      DeviceRef d_in,
                                                      DeviceRef weight_gradient) = 0;
  // The end of a chunk's fp8 forward or backward pass: amaxes reduced, scales updated.
  virtual absl::Status EndFp8Forward(int64_t chunk) = 0;
  virtual absl::Status EndFp8Backward(int64_t chunk) = 0;

  // Attention over the QKV projection [T, (a/t + 2 kv) d] into out [T, a/t d], keeping
  // `kept`; its backward from d_out into d_qkv (attention.h).
  virtual absl::Status AttentionForward(DeviceRef qkv, DeviceRef out,
                                        const AttentionKept& kept) = 0;
  virtual absl::Status AttentionBackward(DeviceRef d_out, DeviceRef out, DeviceRef d_qkv,
                                         const AttentionKept& kept) = 0;

  // Megatron-LM's vocab_parallel_cross_entropy over fp32 logits [T, V/t]: the rows' maximum
  // [T], the maximum or the sum all-reduced over the tensor group, the rows' sum of
  // exponentials [T], and the logits' gradient [T, V/t] bf16 with the loss [T].
  virtual absl::Status LogitsRowMax(DeviceRef logits, DeviceRef row_max) = 0;
  enum class Reduction { kMax, kSum };
  virtual absl::Status AllReduceLogitStatistic(DeviceRef values, Reduction reduction,
                                               std::string_view what) = 0;
  virtual absl::Status LogitsRowSumExp(DeviceRef logits, DeviceRef row_max, DeviceRef row_sum) = 0;
  virtual absl::Status CrossEntropyBackward(DeviceRef logits, DeviceRef row_max, DeviceRef row_sum,
                                            DeviceRef d_logits, DeviceRef loss) = 0;

  // A mixture-of-experts block (worker/cuda/moe_kernels.h, the probe's balanced routing;
  // MoeShardShapes: R routed rows, k, E experts, S = R k copies, N the copies the rank's
  // experts compute, f_e / etp). The router's top-k of logits [R, E] bf16 into probabilities
  // [R, k] fp32 and indices [R, k] int32, and its backward from the probabilities' gradient
  // [R, k] fp32 into the logits' [R, E] bf16.
  virtual absl::Status RouterTopK(DeviceRef logits, DeviceRef probabilities, DeviceRef indices) = 0;
  virtual absl::Status RouterTopKBackward(DeviceRef logits, DeviceRef probabilities,
                                          DeviceRef indices, DeviceRef d_probabilities,
                                          DeviceRef d_logits) = 0;
  // Rows [R, h] and their probabilities [R, k] fp32 to the copies' balanced places [S, h] and
  // [S] (permute); each row's gradient [R, h] to its k copies' places [S, h] (the backward of
  // the sum of copies); the sum of each row's copies [S, h] into rows [R, h] (unpermute, and
  // permute's backward); the copies' probability gradients [S] back to [R, k].
  virtual absl::Status PermuteTokens(DeviceRef rows, DeviceRef probabilities, DeviceRef permuted,
                                     DeviceRef permuted_probabilities) = 0;
  virtual absl::Status ScatterRowGradients(DeviceRef d_rows, DeviceRef d_permuted) = 0;
  virtual absl::Status UnpermuteTokens(DeviceRef permuted, DeviceRef rows) = 0;
  virtual absl::Status UnpermuteProbabilities(DeviceRef d_permuted_probabilities,
                                              DeviceRef d_probabilities) = 0;
  // The expert group's all-to-all: `rows` rows of `width` values of `type` (bf16 or fp32)
  // in ep blocks, block q of `send` to rank q, rank q's block for this rank into block q of
  // `receive`.
  virtual absl::Status ExpertAllToAll(DeviceRef send, DeviceRef receive, int64_t rows,
                                      int64_t width, ElementType type, std::string_view what) = 0;
  // With etp > 1, over the expert tensor group: rows [rows, width] of `type` gathered into
  // [etp rows, width]; partial sums [etp rows, width] reduce-scattered into rows [rows, width].
  virtual absl::Status ExpertTensorAllGather(DeviceRef own, DeviceRef gathered, int64_t rows,
                                             int64_t width, ElementType type,
                                             std::string_view what) = 0;
  virtual absl::Status ExpertTensorReduceScatter(DeviceRef partial, DeviceRef reduced, int64_t rows,
                                                 int64_t width, ElementType type,
                                                 std::string_view what) = 0;
  // Chunks of `chunk_rows` rows of `width` values of `type` from [groups][local_experts] order
  // to [local_experts][groups] (by local expert, for its GEMMs; swapped, back).
  virtual absl::Status SortChunks(DeviceRef in, DeviceRef out, int64_t groups,
                                  int64_t local_experts, int64_t chunk_rows, int64_t width,
                                  ElementType type) = 0;
  // The SwiGLU of gate_up [rows, 2 f_e / etp] into out [rows, f_e / etp], each row weighted by
  // its routing probability [rows] fp32; its backward from d_out into d_gate_up and the
  // probabilities' gradient [rows] fp32.
  virtual absl::Status WeightedSwigluForward(DeviceRef gate_up, DeviceRef probabilities,
                                             DeviceRef out, int64_t rows) = 0;
  virtual absl::Status WeightedSwigluBackward(DeviceRef gate_up, DeviceRef probabilities,
                                              DeviceRef d_out, DeviceRef d_gate_up,
                                              DeviceRef d_probabilities, int64_t rows) = 0;

  // The optimizer step on the compute stream: bucket `bucket`'s gradients reduce-scattered
  // (the distributed optimizer) or all-reduced over the data x context group (a
  // reduce-scatter over its shard group, then the rank's shard all-reduced over the replicas
  // under hybrid sharding: OptimizerLayout::ReducesAcrossReplicas, as every reduce-scatter of
  // gradients below and in IssueDataParallel); Adam; the fp8
  // weights cast from the master weights (fp8_parameters.h); the bucket's parameters
  // all-gathered from the shards.
  virtual absl::Status ReduceScatterGradients(int64_t bucket) = 0;
  virtual absl::Status AllReduceGradients(int64_t bucket) = 0;
  // Under sharded weights (OptimizerLayout::sharded_weights), a unit's weights for one use
  // (weight_gather_plan.h): bucket `gather.bucket`'s all-gathered over its group, on the
  // data-parallel stream once the compute stream's work so far is done, from the rank's shard
  // (kWeights at OptimizerShard::state) into gathered-weight slot `gather.slot`
  // (kGatheredWeights at slot x FootprintPlan::gathered_weight_slot_bytes); where
  // OptimizerLayout::Reduces it not (a REPLICA probe), the rank's shard copied to its place in
  // the slot on the compute stream. WaitWeightGather: the compute stream waits for that gather.
  virtual absl::Status DispatchWeightGather(const WeightGather& gather) = 0;
  virtual absl::Status WaitWeightGather(const WeightGather& gather) = 0;
  // Under sharded gradients (OptimizerLayout::sharded_gradients), on the compute stream around
  // the backward of bucket `bucket`'s unit, which accumulates its unsharded gradients in
  // kGradientStaging from byte 0: the staging zeroed before; after, reduce-scattered in place
  // over the bucket's group where OptimizerLayout::Reduces it, and the rank's shard of it
  // added into the rank's gradient shard (kGradients at OptimizerShard::state), which sums the
  // step's micro-batches.
  virtual absl::Status ZeroStagedGradients(int64_t bucket) = 0;
  virtual absl::Status ReduceStagedGradients(int64_t bucket) = 0;
  virtual absl::Status Adam(const AdamUpdate& update) = 0;
  virtual absl::Status CastMasterWeights() = 0;
  virtual absl::Status GatherParameters(int64_t bucket) = 0;
};

}  // namespace paratune

#endif  // PARATUNE_WORKER_PROBE_DEVICE_OPS_H_
