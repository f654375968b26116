// The operations of one rank's training step as data (the step plan's vocabulary,
// step_plan.h): GEMMs with their shapes and dtypes, attention's passes, every collective with
// its group, dtype, bytes and stream, the fp8 casts and amax updates, the optimizer's work,
// elementwise kernels and stream waits, each with where in the step it runs; and the paths of
// the two linear backward passes, chosen here (NormLinearBackwardPathOf,
// RowLinearBackwardPathOf) for StageRunner to switch on.
#ifndef PARATUNE_WORKER_PROBE_STEP_OPS_H_
#define PARATUNE_WORKER_PROBE_STEP_OPS_H_

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "worker/probe/context_parallel_ring.h"
#include "worker/probe/footprint_plan.h"

namespace paratune {

enum class ElementType { kBf16, kFloat32, kE4M3, kE5M2, kUint8 };
int64_t BytesOf(ElementType type);
const char* ElementTypeName(ElementType type);
// The element type of the probe's gradients: fp32 with fp32_gradients (Megatron-LM's
// --accumulate-allreduce-grads-in-fp32, the gradient buffers and their collectives), else bf16.
ElementType GradientElementType(bool fp32_gradients);

// The streams of StageRunner: the compute stream, the overlapped data-parallel collectives',
// the overlapped tensor-parallel collectives', and attention's ring exchanges'.
enum class StepStream { kCompute, kDataParallel, kTensorParallel, kContextRing };

// The weights a GEMM multiplies by: a layer's four linears, or the LM head; in a
// mixture-of-experts layer (moe_shard_shapes.h) the router, a local expert's fc1 and fc2 and
// the shared experts' fc1 and fc2 in place of the MLP's.
enum class LinearWeight {
  kQkv,
  kAttentionOutput,
  kGateUp,
  kDown,
  kLmHead,
  kRouter,
  kExpertFc1,
  kExpertFc2,
  kSharedFc1,
  kSharedFc2,
};

// Which product of a linear: out = in W^T, d_in = d_out W, d_W += d_out^T in.
enum class GemmRole { kForward, kInputGradient, kWeightGradient };

// One GEMM, C [m, n] = A [m, k] B [k, n] in the role's orientation (forward: m tokens, n
// outputs, k inputs; input gradient: m tokens, n inputs, k outputs; weight gradient: m
// outputs, n inputs, k tokens). A chunked GEMM (a ring exchange's or a pipelined
// reduce-scatter's) is `parts` ops of part `part`.
struct GemmOp {
  LinearWeight weight = LinearWeight::kQkv;
  GemmRole role = GemmRole::kForward;
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  ElementType a = ElementType::kBf16;
  ElementType b = ElementType::kBf16;
  ElementType c = ElementType::kBf16;
  int64_t part = 0;
  int64_t parts = 1;
  // 2 m n k.
  double Flops() const;
};

// How context-parallel attention moves keys and values: not at all (c = 1), the p2p ring, or
// an all-gather (ProbeSpec::cp_comm_type).
enum class AttentionExchange { kNone, kRing, kAllGather };

// One layer's attention pass on the rank: b sequences of `queries` tokens of `heads` query
// heads (kv_heads of them shared, head_dim each) against `keys` keys of each sequence, in the
// products listed (each causal or not; context_parallel_ring.h and attention_graph.h). The
// kernel (cuDNN's fused graphs or the chunked fallback) is chosen on the device
// (Attention::SelectKernel); both run these products.
struct AttentionOp {
  bool backward = false;
  int64_t batch = 0;
  int64_t heads = 0;
  int64_t kv_heads = 0;
  int64_t head_dim = 0;
  int64_t queries = 0;
  int64_t keys = 0;
  AttentionExchange exchange = AttentionExchange::kNone;
  std::vector<RingProduct> products;
  // The model-FLOPs convention's attention (shard_shapes.h LayerForwardModelFlops): QK^T and
  // PV over every key, 4 b queries keys heads head_dim forward, twice that backward.
  double ModelFlops() const;
};

// Which traffic a collective is, for per-family totals.
// kExpertData: a mixture-of-experts model's expert gradients and parameters, over the expert
// data-parallel group (RankGroup::kExpertData); kData: every other parameter's, over data x
// context (its shard group under hybrid sharding); kDataReplica: under hybrid sharding, the
// all-reduce of a dense gradient shard over its replicas (RankGroup::kDataReplica). kExpert and
// kExpertTensor: the MoE block's token dispatch and combine over the expert group and the expert
// tensor group.
enum class CollectiveFamily {
  kTensor,
  kContext,
  kData,
  kDataReplica,
  kPipeline,
  kFp8Amax,
  kExpertData,
  kExpert,
  kExpertTensor,
};
const char* CollectiveFamilyName(CollectiveFamily family);

// kExchange: a ring step's send to the next rank and receive from the previous one, posted
// together (TensorParallelTransport::Exchange, RingTransport::Exchange).
// kAllToAll: every rank's block for every other (communicators.h AllToAll).
enum class CollectiveKind {
  kAllGather,
  kReduceScatter,
  kAllReduce,
  kSend,
  kReceive,
  kExchange,
  kAllToAll,
};

// One collective or one side of a point-to-point transfer, `bytes` in nccl-tests' terms (the
// whole gathered buffer of an all-gather, the whole input of a reduce-scatter or all-reduce, a
// send's or receive's message, an exchange's message each way).
struct CollectiveOp {
  CollectiveFamily family = CollectiveFamily::kTensor;
  CollectiveKind kind = CollectiveKind::kAllGather;
  ElementType type = ElementType::kBf16;
  int64_t bytes = 0;
  StepStream stream = StepStream::kCompute;
  // What it moves, for the golden files ("qkv input", "bucket 3", ...).
  std::string what;
  // For a pipeline transfer: the peer stage, and the chunk and micro-batch whose boundary
  // tensor it is (pipeline_schedule.h Transfer); -1 otherwise.
  int64_t peer = -1;
  int64_t chunk = -1;
  int64_t micro_batch = -1;
  // Bytes that leave or reach the rank's buffers: an exchange's both ways, `bytes` otherwise.
  int64_t MovedBytes() const { return kind == CollectiveKind::kExchange ? 2 * bytes : bytes; }
};

// An fp8 cast (or transpose) of `rows` x `columns` values into `to`, recording an amax when
// it casts.
struct CastOp {
  LinearWeight weight = LinearWeight::kQkv;
  std::string what;  // "weight", "input", "output gradient", "weight transpose", ...
  int64_t rows = 0;
  int64_t columns = 0;
  ElementType to = ElementType::kE4M3;
};

// The end of a chunk's forward or backward fp8 pass, or of the optimizer's fp8 weight casts:
// `tensors` amaxes (reduced beforehand by a kFp8Amax collective where the group has more than
// one rank) roll into their histories and set the scales.
struct AmaxUpdateOp {
  std::string what;  // "forward", "backward", "weights"
  int64_t tensors = 0;
};

// Adam over `elements` of a bucket's shard, or the cast of fp8 master weights.
struct OptimizerOp {
  std::string what;
  int64_t elements = 0;
};

// Everything else the compute stream runs: norms, SwiGLU, embedding, cross-entropy, residual
// adds, copies, memsets; `elements` values touched.
struct ElementwiseOp {
  std::string what;
  int64_t elements = 0;
};

// The compute stream waits for the work given to `stream` so far (an overlapped collective).
struct WaitOp {
  StepStream stream = StepStream::kDataParallel;
  std::string what;
};

using StepOpDetail = std::variant<GemmOp, AttentionOp, CollectiveOp, CastOp, AmaxUpdateOp,
                                  OptimizerOp, ElementwiseOp, WaitOp>;

// Where in the step an op runs: the schedule's pass (-1 outside passes), its chunk and
// micro-batch, the stage layer (ParameterLayout::layers; -1 outside layers), whether it is a
// recomputed forward, and the activation slot the pass holds (-1 outside passes).
struct StepOpContext {
  int64_t pass = -1;
  int64_t chunk = -1;
  int64_t micro_batch = -1;
  int64_t layer = -1;
  bool recompute = false;
  int64_t slot = -1;
};

struct StepOp {
  StepOpContext context;
  StepOpDetail detail;
  // The footprint buffers the op works in: the operands the DeviceOps call that asked for it
  // names (device_ops.h), in the order it names them, or for a call without operands the
  // buffers its work is defined on (a bucket's gradients, the weights, the fp8 scaling
  // state). A component's own scratch buffers (cuBLASLt's workspace, attention's transient
  // ones, the fp8 linears' cast buffers) are not listed.
  std::vector<ProbeBuffer> buffers;
};

// The paths of StageRunner::NormLinearBackward: fp8 with the bulk-overlapped collectives, fp8
// exposed, bf16 bulk-overlapped, bf16 exposed (the input re-gathered with sequence
// parallelism, then both products and the input gradient's reduction).
enum class NormLinearBackwardPath { kFp8Overlapped, kFp8, kBf16Overlapped, kBf16 };
// The paths of StageRunner::RowLinearBackward: fp8 ring-overlapped, bf16 ring-overlapped, fp8
// with the output gradient gathered in fp8 (sequence parallelism), fp8 from a bf16 gathered (or
// whole) output gradient, bf16.
enum class RowLinearBackwardPath {
  kFp8Overlapped,
  kBf16Overlapped,
  kFp8SequenceParallel,
  kFp8,
  kBf16
};
// `fp8`: the linear runs in fp8 (a layer's in fp8 training); `overlapped`: its collectives run
// beside its GEMMs (a layer's linear with --tp-comm-overlap); `sequence_parallel`:
// ShardShapes::sequence_parallel.
NormLinearBackwardPath NormLinearBackwardPathOf(bool fp8, bool overlapped);
RowLinearBackwardPath RowLinearBackwardPathOf(bool fp8, bool overlapped, bool sequence_parallel);

// One line per op in a compact, stable form.
std::string DescribeOp(const StepOp& op);
// "where: what" of DescribeOp, `layers` in place of the op's layer ("L3", "L1..L15"; empty
// outside a layer).
std::string DescribeContext(const StepOpContext& at, const std::string& layers);

const char* LinearWeightName(LinearWeight weight);

}  // namespace paratune

#endif  // PARATUNE_WORKER_PROBE_STEP_OPS_H_
