#include "worker/probe/attention_graph.h"

#include <cmath>
#include <limits>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace paratune {

const GraphTensor* AttentionGraph::Find(int64_t uid) const {
  for (const GraphTensor& tensor : tensors) {
    if (tensor.uid == uid) return &tensor;
  }
  return nullptr;
}

namespace {

// Appends tensors and ops, numbering intermediates from kAttentionFirstVirtualUid.
class GraphBuilder {
 public:
  int64_t Tensor(int64_t uid, std::vector<int64_t> dims, std::vector<int64_t> strides,
                 GraphDataType type) {
    graph_.tensors.push_back({uid, std::move(dims), std::move(strides), type, false, {}});
    return uid;
  }
  int64_t Scalar(int64_t uid, float value) {
    graph_.tensors.push_back(
        {uid, {1, 1, 1, 1}, {1, 1, 1, 1}, GraphDataType::kFloat, false, value});
    return uid;
  }
  // A virtual output of `kind` over `inputs`, shaped `dims` (packed).
  int64_t Op(GraphOpKind kind, std::vector<int64_t> inputs, const std::vector<int64_t>& dims,
             GraphDataType type = GraphDataType::kFloat,
             GraphDataType compute_type = GraphDataType::kFloat) {
    const int64_t uid = next_uid_++;
    graph_.tensors.push_back({uid, dims, Packed(dims), type, true, {}});
    return OpInto(kind, std::move(inputs), uid, compute_type);
  }
  // `kind` writing the existing tensor `output`.
  int64_t OpInto(GraphOpKind kind, std::vector<int64_t> inputs, int64_t output,
                 GraphDataType compute_type = GraphDataType::kFloat) {
    graph_.ops.push_back({kind, std::move(inputs), output, compute_type});
    return output;
  }
  AttentionGraph Build() && { return std::move(graph_); }

 private:
  static std::vector<int64_t> Packed(const std::vector<int64_t>& dims) {
    std::vector<int64_t> strides(dims.size(), 1);
    for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i) {
      strides[i] = strides[i + 1] * dims[i + 1];
    }
    return strides;
  }

  AttentionGraph graph_;
  int64_t next_uid_ = kAttentionFirstVirtualUid;
};

}  // namespace

absl::StatusOr<AttentionGraph> CausalAttentionForwardGraph(const ShardShapes& shapes) {
  if (shapes.context_parallel > 1) {
    return absl::UnimplementedError(absl::StrCat(
        "context_parallel ", shapes.context_parallel,
        ": a rank's queries are two position ranges and its all-gathered keys are in rank "
        "order, so the causal mask is not one diagonal"));
  }
  const int64_t batch = shapes.micro_batch * shapes.kv_heads;  // b G
  const int64_t heads = shapes.QueryHeadsPerKvHead();          // H
  const int64_t n = shapes.sequence_per_rank;
  const int64_t d = shapes.head_dim;
  using T = GraphDataType;
  using K = GraphOpKind;

  GraphBuilder g;
  const std::vector<int64_t> query_dims = {batch, heads, n, d};
  const std::vector<int64_t> query_strides = {n * heads * d, d, heads * d, 1};
  const int64_t query = g.Tensor(kAttentionQueryUid, query_dims, query_strides, T::kBfloat16);
  const int64_t keys =
      g.Tensor(kAttentionKeyTransposedUid, {batch, 1, d, n}, {n * d, n * d, 1, d}, T::kBfloat16);
  const int64_t values =
      g.Tensor(kAttentionValueUid, {batch, 1, n, d}, {n * d, n * d, d, 1}, T::kBfloat16);
  const int64_t output = g.Tensor(kAttentionOutputUid, query_dims, query_strides, T::kBfloat16);
  // lse layout [b, G, n, H].
  const int64_t stats =
      g.Tensor(kAttentionStatsUid, {batch, heads, n, 1}, {n * heads, 1, heads, 1}, T::kFloat);
  const int64_t scale =
      g.Scalar(kAttentionScaleUid, 1.0f / std::sqrt(static_cast<float>(shapes.head_dim)));
  // The lowest float rather than -inf, as cuDNN's frontend masks: exp of it is exactly 0 and
  // a subtraction of two of them is no NaN.
  const int64_t masked_score =
      g.Scalar(kAttentionMaskedScoreUid, std::numeric_limits<float>::lowest());

  const std::vector<int64_t> score_dims = {batch, heads, n, n};
  const std::vector<int64_t> row_dims = {batch, heads, n, 1};
  const int64_t products = g.Op(K::kMatmul, {query, keys}, score_dims);
  const int64_t scores = g.Op(K::kMultiply, {products, scale}, score_dims);
  // Causal: query row i sees key column j <= i (c = 1: row and column are positions).
  const int64_t rows = g.Op(K::kRowIndex, {scores}, score_dims, T::kInt32, T::kInt32);
  const int64_t columns = g.Op(K::kColumnIndex, {scores}, score_dims, T::kInt32, T::kInt32);
  const int64_t visible =
      g.Op(K::kGreaterEqual, {rows, columns}, score_dims, T::kBoolean, T::kBoolean);
  const int64_t masked = g.Op(K::kSelect, {scores, masked_score, visible}, score_dims);
  // Softmax with statistics: lse = max + ln(sum exp(x - max)).
  const int64_t most = g.Op(K::kReduceMax, {masked}, row_dims);
  const int64_t shifted = g.Op(K::kSubtract, {masked, most}, score_dims);
  const int64_t exponentials = g.Op(K::kExp, {shifted}, score_dims);
  const int64_t sums = g.Op(K::kReduceSum, {exponentials}, row_dims);
  const int64_t log_sums = g.Op(K::kLog, {sums}, row_dims);
  g.OpInto(K::kAdd, {most, log_sums}, stats);
  // cuDNN takes the second product's left operand in the input type (bf16).
  const int64_t probabilities = g.Op(K::kDivide, {exponentials, sums}, score_dims, T::kBfloat16);
  g.OpInto(K::kMatmul, {probabilities, values}, output);
  return std::move(g).Build();
}

}  // namespace paratune
