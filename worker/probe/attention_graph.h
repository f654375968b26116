// The operation graphs of causal grouped-query attention's forward and backward passes as
// cuDNN's backend API takes them (docs/probe.md): tensors with dimensions, strides and unique
// ids, and the list of operations over them. cuDNN's engine heuristics recognise these graphs
// as scaled dot-product attention and run each as fused flash-attention kernels; the graphs
// are the decompositions cuDNN's own frontend builds for its SDPA nodes (forward: matmul
// Q K^T, scale, causal mask, softmax with log-sum-exp statistics, matmul with V; backward:
// cudnn-frontend v1.8.0's SDPABackwardNode::build_operation_graph in
// include/cudnn_frontend/node/scaled_dot_product_flash_attention.h, see
// CausalAttentionBackwardGraph). worker/cuda/cudnn_attention turns them into cuDNN
// descriptors; nothing here needs CUDA, so the shapes are tested on any machine.
//
// The tensors view the probe's own layouts (worker/cuda/attention_kernels.h) in place: cuDNN
// works on [batch, heads, tokens, d] tensors, and the probe's query layout [b, G, n, H, d]
// is exactly that with batch = b G (a sequence's kv group), heads = the H query heads of the
// group, tokens n and d, with strides (n H d, d, H d, 1); the group's one key and value head
// is a kv tensor of one head, which cuDNN shares among the H query heads (its GQA).
//
// Context parallelism's p2p ring (worker/probe/context_parallel_ring.h) computes a rank's
// attention as products of sub-ranges of its queries and a held block's keys, each with or
// without the causal mask; the graphs are built per product, as Transformer Engine calls
// its fused attention per ring step (context_parallel.py, cp_p2p_fwd_fused_attn and
// cp_p2p_bwd_fused_attn: the "diagonal" step causal, the "lower-triangle" and
// "upper-triangle" steps no_mask). A sub-range of tokens is the same strided view with
// fewer rows, starting `offset` elements into the layout, where Transformer Engine copies
// the half it takes into a contiguous tensor.
//
// Context parallelism with all_gather (Transformer Engine's AttnFuncWithCPAndKVAllGather in
// the same file) runs one product per query half: chunk r's queries, then chunk 2c-1-r's,
// each against every key up to its last position, causal aligned bottom-right. The
// all-gathered keys are ordered by rank, each rank's two chunks apart, so no one strided view
// holds a prefix of positions; as Transformer Engine index-selects the gathered chunks into
// position order (get_seq_chunk_ids_for_reordering_before_attn) before its fused attention,
// the probe reorders them once per pass into a position-ordered buffer
// (AllGatherKeyValueBytes), and each half's keys are a prefix of it.
#ifndef PARATUNE_WORKER_PROBE_ATTENTION_GRAPH_H_
#define PARATUNE_WORKER_PROBE_ATTENTION_GRAPH_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "worker/probe/context_parallel_ring.h"
#include "worker/probe/shard_shapes.h"

namespace paratune {

enum class GraphDataType { kBfloat16, kFloat, kInt32, kBoolean };

struct GraphTensor {
  int64_t uid = 0;
  std::vector<int64_t> dims;     // 4-D, [batch, heads, rows, columns]
  std::vector<int64_t> strides;  // elements
  GraphDataType type = GraphDataType::kFloat;
  // An intermediate that lives only inside the fused kernel.
  bool is_virtual = false;
  // A scalar passed by value (dims and strides all 1): its value, as `type`.
  std::optional<float> value;
  // A tensor cuDNN's kernels pass between each other through device memory but the caller
  // does not bind (the frontend's dQ_accum and softmax_sum): it lives in the plan's
  // workspace, this many bytes after cuDNN's own part (AttentionGraph::workspace_tensor_bytes);
  // -1 for every other tensor.
  int64_t workspace_offset = -1;
  // cuDNN adds into this workspace tensor, so it must hold zeros when an execution starts;
  // cuDNN 9.6 and later clear it themselves (the frontend memsets dQ_accum below 9.6 only).
  bool accumulated = false;
  // Elements from the part of a bound tensor one execution reads or writes to the next
  // execution's (AttentionGraph::executions); 0 for tensors every execution shares.
  int64_t execution_stride = 0;
  // Elements from a bound tensor's pointer to its element 0: where a product's first query
  // or key lies in the layout (0 when the tensor starts at the pointer).
  int64_t offset = 0;
};

enum class GraphOpKind {
  kMatmul,        // output = inputs[0] x inputs[1], batched over the first two dims
  kReduceMax,     // over the dims where the output's size is 1 (the forward's: the last)
  kReduceSum,     // over the dims where the output's size is 1
  kMultiply,      // inputs[0] * inputs[1] (broadcast)
  kAdd,           // inputs[0] + inputs[1]
  kSubtract,      // inputs[0] - inputs[1]
  kDivide,        // inputs[0] / inputs[1]
  kExp,           // e^inputs[0]
  kLog,           // ln inputs[0]
  kRowIndex,      // int32 index along dim 2 of inputs[0]'s shape
  kColumnIndex,   // int32 index along dim 3 of inputs[0]'s shape
  kGreaterEqual,  // boolean inputs[0] >= inputs[1]
  kSelect,        // inputs[2] ? inputs[0] : inputs[1]
  kIdentity,      // inputs[0], converted to the output's type
  kReshape,       // inputs[0] viewed with the output's dims and strides (a transpose)
};

struct GraphOp {
  GraphOpKind kind = GraphOpKind::kMatmul;
  std::vector<int64_t> inputs;  // uids
  int64_t output = 0;           // uid
  // The type the op computes in: float, int32 for indices, boolean for comparisons.
  GraphDataType compute_type = GraphDataType::kFloat;
};

// Bytes of one element of `type`.
int64_t GraphDataTypeBytes(GraphDataType type);

// Unique ids of the tensors the caller binds to device memory, of the scalars and of the
// workspace tensors (the rest are virtual). Layouts of attention_kernels.h.
enum AttentionGraphUid : int64_t {
  kAttentionQueryUid = 1,              // bf16 query layout
  kAttentionKeyTransposedUid = 2,      // bf16 kv layout, keys, viewed as [b G, 1, d, n]
  kAttentionValueUid = 3,              // bf16 kv layout, values
  kAttentionOutputUid = 4,             // bf16 query layout: the forward's output
  kAttentionStatsUid = 5,              // fp32 lse layout: each query row's log-sum-exp
  kAttentionScaleUid = 6,              // by value: 1 / sqrt(d)
  kAttentionMaskedScoreUid = 7,        // by value: the score of a key a query must not see
  kAttentionValueTransposedUid = 8,    // bf16 kv layout, values, viewed as [G, 1, d, n]
  kAttentionOutputTokensUid = 9,       // bf16 tokens layout: the forward's output
  kAttentionOutputGradientUid = 10,    // bf16 tokens layout: its gradient dO
  kAttentionQueryGradientUid = 11,     // bf16 query layout: dQ
  kAttentionKeyGradientUid = 12,       // bf16 kv layout: dK
  kAttentionValueGradientUid = 13,     // bf16 kv layout: dV
  kAttentionOneUid = 14,               // by value: 1
  kAttentionRowSumsUid = 15,           // fp32 workspace: rowsum(dO * O), softmax_sum
  kAttentionQueryGradientSumUid = 16,  // fp32 workspace: dQ accumulated, dQ_accum
  kAttentionKeyCountUid = 17,          // by value, int32: a bottom-right product's keys
  kAttentionQueryCountUid = 18,        // by value, int32: a bottom-right product's queries
  kAttentionFirstVirtualUid = 100,     // intermediates are numbered from here
};

// Workspace tensors start at multiples of this many bytes.
inline constexpr int64_t kGraphWorkspaceAlignment = 256;

struct AttentionGraph {
  std::vector<GraphTensor> tensors;  // every tensor an op reads or writes, uids distinct
  std::vector<GraphOp> ops;          // in execution order: each reads only earlier outputs
  // The graph runs this many times per micro-batch; execution i binds each bound tensor at
  // its pointer + i * execution_stride elements.
  int64_t executions = 1;
  // Bytes the workspace tensors take after cuDNN's own workspace (shared by all executions).
  int64_t workspace_tensor_bytes = 0;
  // The tensor with `uid`; nullptr when there is none.
  const GraphTensor* Find(int64_t uid) const;
};

// The forward graph of one product of a micro-batch's attention on a rank with `shapes`:
// each sequence's local queries [first_query, first_query + queries) against the local keys
// [first_key, first_key + keys) of a kv-layout block (the rank's own or a received one), or
// with product.gathered_keys the positions [first_key, first_key + keys) of every rank's
// keys in position order ([2, b, G, s, d], AllGatherKeyValueBytes), with `product.mask`:
// kCausal compares row >= column of the product's scores, which with first_query ==
// first_key (required) is key position <= query position; kCausalBottomRight compares row +
// keys - queries >= column as cudnn-frontend v1.8.0's SDPANode builds
// causal_mask_bottom_right (the row index plus the int32 scalar keys, minus the int32 scalar
// queries; keys >= queries required, so that every query sees a key); kNone has no mask and
// no masked-score scalar. Reads query, keys and values, writes the product's rows of the
// output and of the log-sum-exp statistics (the same natural-log lse the chunked path keeps,
// so either backward can use it, and the ring's log-sum-exp merge can weigh it).
//
// The ring's step 0 is one causal product over all n local tokens: a load-balanced rank's
// two position ranges (chunks r and 2c-1-r) each increase with the local index and chunk r
// precedes chunk 2c-1-r, so local row >= column is exactly the causal mask, one diagonal
// (the "diagonal" step Transformer Engine runs with its causal mask over the rank's whole
// local sequence). The other steps are the first half of the keys seen by every query, or
// every key seen by the second half of the queries, unmasked.
//
// INVALID_ARGUMENT naming the field when the product is outside [0, n) (its keys outside
// [0, s) when gathered), causal off the diagonal or bottom-right with fewer keys than
// queries; UNIMPLEMENTED when a bound tensor's first element is not 16-byte aligned
// (cuDNN's alignment of the pointers).
absl::StatusOr<AttentionGraph> AttentionForwardGraph(const ShardShapes& shapes,
                                                     const RingProduct& product);

// The whole causal attention of a rank without context parallelism (or the all-gather path's
// one score matrix): AttentionForwardGraph of all n queries against all n keys, causal.
// UNIMPLEMENTED with the reason when the probe's layouts cannot be described to cuDNN as one
// graph: with context parallelism a rank's queries are two position ranges and the
// all-gathered keys are ordered by rank, not position, so the causal mask is no longer the
// diagonal of one score matrix (the p2p ring builds a graph per product instead, and
// all_gather one per query half: AllGatherProducts).
absl::StatusOr<AttentionGraph> CausalAttentionForwardGraph(const ShardShapes& shapes);

// The backward graph of the same attention, as cudnn-frontend v1.8.0's
// SDPABackwardNode::build_operation_graph builds it for cuDNN 9 (without dropout, bias or
// padding): softmax_sum = rowsum(dO * O) x 1 into the workspace; the probabilities P =
// exp(mask(scale Q K^T) - lse) again from the forward's natural-log lse; dV = P^T dO; dP =
// dO V^T x 1; dS = P (dP - softmax_sum) x scale; dK = dS^T Q; dQ = dS K accumulated in fp32
// in the workspace (dQ_accum) and converted to bf16. With H > 1 query heads per kv head
// (GQA) dK and dV are each a product over the H heads into a virtual [G, H, n, d] tensor and
// a sum over its heads, as the frontend's dK_fullhead and dV_fullhead.
//
// It reads Q (query layout), K, V (kv layout), the forward's output O and dO (tokens
// layout, as the output projection writes them) and the lse, and writes dQ (query layout)
// and bf16 dK, dV (kv layout). It covers one sequence and runs once per sequence of the
// micro-batch (executions = b): in the tokens layout [b, n, G, H, d] a sequence's G kv
// groups are H d apart, one stride, so within a sequence batch = G kv groups, heads = H,
// and O and dO are read in place (the layout Transformer Engine calls sbhd); across
// sequences the batch entries (sequence, kv head) would need two strides. UNIMPLEMENTED with
// the reason for context parallelism (as the forward), or when one sequence's part of a
// bound tensor is not a multiple of 16 bytes (cuDNN's alignment of every execution's
// pointers).
absl::StatusOr<AttentionGraph> CausalAttentionBackwardGraph(const ShardShapes& shapes);

// The backward graph of one product (as AttentionForwardGraph's, mask and sub-ranges alike),
// the ring's per-step backward from the global output and log-sum-exp: P from the global lse
// is the product's part of the global probabilities, and softmax_sum = rowsum(dO O) of the
// global output is the global D, so dQ of the product's queries and dK, dV of its keys are
// the step's contributions, which the caller adds up around the ring (cuDNN writes them).
// O, dO, lse and dQ are read and written at the product's queries, K, V, dK and dV at its
// keys. Errors as AttentionForwardGraph, and as CausalAttentionBackwardGraph's alignment.
absl::StatusOr<AttentionGraph> AttentionBackwardGraph(const ShardShapes& shapes,
                                                      const RingProduct& product);

// The products of context rank `rank`'s attention with all_gather, as Transformer Engine's
// AttnFuncWithCPAndKVAllGather computes them: for each half of the rank's n local tokens,
// chunk r ([0, n/2)) and chunk 2c-1-r ([n/2, n)) of s/(2c) positions, the half's queries
// against the gathered positions [0, end of the half's chunk), kCausalBottomRight (the
// half's queries are the last positions of its keys). The two write disjoint rows of the
// output and lse, and their dK and dV add up over the keys both see. INVALID_ARGUMENT naming
// the value unless shapes.context_parallel >= 2, 0 <= rank < context_parallel and n is even.
absl::StatusOr<std::vector<RingProduct>> AllGatherProducts(const ShardShapes& shapes, int64_t rank);

// Bytes of every context rank's keys and values in position order, [2, b, G, s, d] bf16,
// rounded up to kGraphWorkspaceAlignment: the all-gather path's fused passes reorder the
// gathered keys into these first bytes of the workspace they give cuDNN's attention, whose
// plans run in what follows (the backward's bf16 dK and dV go to the all-gathered buffer,
// free once reordered; worker/cuda/attention.h).
int64_t AllGatherKeyValueBytes(const ShardShapes& shapes);

// Where the fused backward's dK and dV go: the probe keeps fp32 key and value gradients, the
// graph writes bf16, so it writes them, for the whole micro-batch as one bf16 kv layout
// [2, b, G, n, d], at the start of the workspace the probe gives cuDNN's attention, and the
// probe converts them (worker/cuda/attention.h); cuDNN's own workspace and the graph's
// workspace tensors follow. These bytes, rounded up to kGraphWorkspaceAlignment.
int64_t FusedBackwardGradientBytes(const ShardShapes& shapes);

}  // namespace paratune

#endif  // PARATUNE_WORKER_PROBE_ATTENTION_GRAPH_H_
