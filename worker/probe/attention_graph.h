// The operation graph of causal grouped-query attention's forward pass as cuDNN's backend API
// takes it (docs/probe.md): tensors with dimensions, strides and unique ids, and the list of
// operations over them. cuDNN's engine heuristics recognise this graph as scaled dot-product
// attention and run it as one fused flash-attention kernel; the graph is the decomposition
// cuDNN's own frontend builds for its SDPA node (matmul Q K^T, scale, causal mask, softmax
// with log-sum-exp statistics, matmul with V). worker/cuda/cudnn_attention turns it into
// cuDNN descriptors; nothing here needs CUDA, so the shapes are tested on any machine.
//
// The tensors view the probe's own layouts (worker/cuda/attention_kernels.h) in place: cuDNN
// works on [batch, heads, tokens, d] tensors, and the probe's query layout [b, G, n, H, d]
// is exactly that with batch = b G (a sequence's kv group), heads = the H query heads of the
// group, tokens n and d, with strides (n H d, d, H d, 1); the group's one key and value head
// is a kv tensor of one head, which cuDNN shares among the H query heads (its GQA).
#ifndef PARATUNE_WORKER_PROBE_ATTENTION_GRAPH_H_
#define PARATUNE_WORKER_PROBE_ATTENTION_GRAPH_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
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
};

enum class GraphOpKind {
  kMatmul,        // output = inputs[0] x inputs[1], batched over the first two dims
  kReduceMax,     // over the last dim
  kReduceSum,     // over the last dim
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
};

struct GraphOp {
  GraphOpKind kind = GraphOpKind::kMatmul;
  std::vector<int64_t> inputs;  // uids
  int64_t output = 0;           // uid
  // The type the op computes in: float, int32 for indices, boolean for comparisons.
  GraphDataType compute_type = GraphDataType::kFloat;
};

// Unique ids of the tensors the caller binds to device memory (the rest are virtual or by
// value).
enum AttentionGraphUid : int64_t {
  kAttentionQueryUid = 1,           // bf16 query layout
  kAttentionKeyTransposedUid = 2,   // bf16 kv layout, keys, viewed as [b G, 1, d, n]
  kAttentionValueUid = 3,           // bf16 kv layout, values
  kAttentionOutputUid = 4,          // bf16 query layout
  kAttentionStatsUid = 5,           // fp32 lse layout: each query row's log-sum-exp
  kAttentionScaleUid = 6,           // by value: 1 / sqrt(d)
  kAttentionMaskedScoreUid = 7,     // by value: the score of a key a query must not see
  kAttentionFirstVirtualUid = 100,  // intermediates are numbered from here
};

struct AttentionGraph {
  std::vector<GraphTensor> tensors;  // every tensor an op reads or writes, uids distinct
  std::vector<GraphOp> ops;          // in execution order: each reads only earlier outputs
  // The tensor with `uid`; nullptr when there is none.
  const GraphTensor* Find(int64_t uid) const;
};

// The forward graph of one micro-batch's causal attention on a rank with `shapes`: reads
// query, keys and values, writes the output and the log-sum-exp statistics (the same
// natural-log lse the chunked path keeps, so either backward can use it). UNIMPLEMENTED with
// the reason when the probe's layouts cannot be described to cuDNN as one graph: with context
// parallelism a rank's queries are two position ranges and the gathered keys are ordered by
// rank, not position, so the causal mask is no longer the diagonal of one score matrix.
absl::StatusOr<AttentionGraph> CausalAttentionForwardGraph(const ShardShapes& shapes);

}  // namespace paratune

#endif  // PARATUNE_WORKER_PROBE_ATTENTION_GRAPH_H_
