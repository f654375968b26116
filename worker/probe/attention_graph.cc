#include "worker/probe/attention_graph.h"

#include <cmath>
#include <limits>
#include <tuple>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/status_macros.h"

namespace paratune {

const GraphTensor* AttentionGraph::Find(int64_t uid) const {
  for (const GraphTensor& tensor : tensors) {
    if (tensor.uid == uid) return &tensor;
  }
  return nullptr;
}

int64_t GraphDataTypeBytes(GraphDataType type) {
  switch (type) {
    case GraphDataType::kBfloat16:
      return 2;
    case GraphDataType::kFloat:
    case GraphDataType::kInt32:
      return 4;
    case GraphDataType::kBoolean:
      return 1;
  }
  return 4;
}

namespace {

std::vector<int64_t> Packed(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i) {
    strides[i] = strides[i + 1] * dims[i + 1];
  }
  return strides;
}

// The same dims and strides with the last two swapped: a transposed view.
std::vector<int64_t> SwapLastTwo(std::vector<int64_t> values) {
  std::swap(values[2], values[3]);
  return values;
}

// Appends tensors and ops, numbering intermediates from kAttentionFirstVirtualUid.
class GraphBuilder {
 public:
  int64_t Tensor(int64_t uid, std::vector<int64_t> dims, std::vector<int64_t> strides,
                 GraphDataType type, int64_t execution_stride = 0, int64_t offset = 0) {
    GraphTensor tensor{uid, std::move(dims), std::move(strides), type, false, {}};
    tensor.execution_stride = execution_stride;
    tensor.offset = offset;
    graph_.tensors.push_back(std::move(tensor));
    return uid;
  }
  int64_t Scalar(int64_t uid, float value, GraphDataType type = GraphDataType::kFloat) {
    graph_.tensors.push_back({uid, {1, 1, 1, 1}, {1, 1, 1, 1}, type, false, value});
    return uid;
  }
  // An fp32 tensor in the workspace, packed, after the workspace tensors before it.
  int64_t Workspace(int64_t uid, const std::vector<int64_t>& dims, bool accumulated) {
    GraphTensor tensor{uid, dims, Packed(dims), GraphDataType::kFloat, false, {}};
    int64_t bytes = GraphDataTypeBytes(tensor.type);
    for (int64_t dim : dims) bytes *= dim;
    tensor.workspace_offset = graph_.workspace_tensor_bytes;
    tensor.accumulated = accumulated;
    graph_.workspace_tensor_bytes += (bytes + kGraphWorkspaceAlignment - 1) /
                                     kGraphWorkspaceAlignment * kGraphWorkspaceAlignment;
    graph_.tensors.push_back(std::move(tensor));
    return uid;
  }
  // A virtual output of `kind` over `inputs`, shaped `dims` (packed).
  int64_t Op(GraphOpKind kind, std::vector<int64_t> inputs, const std::vector<int64_t>& dims,
             GraphDataType type = GraphDataType::kFloat,
             GraphDataType compute_type = GraphDataType::kFloat) {
    return StridedOp(kind, std::move(inputs), dims, Packed(dims), type, compute_type);
  }
  // A virtual output of `kind` with explicit strides.
  int64_t StridedOp(GraphOpKind kind, std::vector<int64_t> inputs, std::vector<int64_t> dims,
                    std::vector<int64_t> strides, GraphDataType type = GraphDataType::kFloat,
                    GraphDataType compute_type = GraphDataType::kFloat) {
    const int64_t uid = next_uid_++;
    graph_.tensors.push_back({uid, std::move(dims), std::move(strides), type, true, {}});
    return OpInto(kind, std::move(inputs), uid, compute_type);
  }
  // `kind` writing the existing tensor `output`.
  int64_t OpInto(GraphOpKind kind, std::vector<int64_t> inputs, int64_t output,
                 GraphDataType compute_type = GraphDataType::kFloat) {
    graph_.ops.push_back({kind, std::move(inputs), output, compute_type});
    return output;
  }
  // inputs[0] viewed transposed (the last two dims and strides swapped) as `type`.
  int64_t Transposed(int64_t input, GraphDataType type) {
    const GraphTensor& in = *graph_.Find(input);
    return StridedOp(GraphOpKind::kReshape, {input}, SwapLastTwo(in.dims), SwapLastTwo(in.strides),
                     type);
  }
  void SetExecutions(int64_t executions) { graph_.executions = executions; }
  AttentionGraph Build() && { return std::move(graph_); }

 private:
  AttentionGraph graph_;
  int64_t next_uid_ = kAttentionFirstVirtualUid;
};

absl::Status CheckOneGraph(const ShardShapes& shapes) {
  if (shapes.context_parallel > 1) {
    return absl::UnimplementedError(absl::StrCat(
        "context_parallel ", shapes.context_parallel,
        ": a rank's queries are two position ranges and its all-gathered keys are in rank "
        "order, so the causal mask is not one diagonal"));
  }
  return absl::OkStatus();
}

// The whole causal attention of a rank's n tokens.
RingProduct WholeCausal(const ShardShapes& shapes) {
  return {0, shapes.sequence_per_rank, 0, shapes.sequence_per_rank, RingMask::kCausal};
}

// Tokens of one sequence and kv head in the buffer a product's keys are read from.
int64_t KeyTokens(const ShardShapes& shapes, const RingProduct& product) {
  return product.gathered_keys ? shapes.sequence : shapes.sequence_per_rank;
}

absl::Status CheckProduct(const ShardShapes& shapes, const RingProduct& product) {
  for (const auto& [name, first, count, bound] :
       {std::tuple{"queries", product.first_query, product.queries, shapes.sequence_per_rank},
        std::tuple{"keys", product.first_key, product.keys, KeyTokens(shapes, product)}}) {
    if (first < 0 || count <= 0 || first + count > bound) {
      return absl::InvalidArgumentError(absl::StrCat("product ", name, " [", first, ", ",
                                                     first + count, ") not within the ", bound,
                                                     " tokens of its layout"));
    }
  }
  if (product.mask == RingMask::kCausalBottomRight && product.keys < product.queries) {
    return absl::InvalidArgumentError(
        absl::StrCat("bottom-right causal product with fewer keys (", product.keys,
                     ") than queries (", product.queries, "): its first queries see no key"));
  }
  if (product.mask == RingMask::kCausal && product.first_query != product.first_key) {
    return absl::InvalidArgumentError(absl::StrCat("causal product off the diagonal: first_query ",
                                                   product.first_query, ", first_key ",
                                                   product.first_key));
  }
  return absl::OkStatus();
}

// cuDNN takes 16-byte aligned pointers only: `bytes` into a bound tensor's layout, where
// `what` starts.
absl::Status CheckAligned(absl::string_view what, int64_t bytes) {
  if (bytes % 16 != 0) {
    return absl::UnimplementedError(absl::StrCat(what, " is ", bytes,
                                                 " bytes, not a multiple of cuDNN's 16-byte "
                                                 "alignment"));
  }
  return absl::OkStatus();
}

// The product's first query in the query (and tokens) layouts and first key in the kv
// layout must be aligned as the pointers they offset.
absl::Status CheckOffsetsAligned(const ShardShapes& shapes, const RingProduct& product) {
  const int64_t heads = shapes.QueryHeadsPerKvHead();
  const int64_t d = shapes.head_dim;
  PT_RETURN_IF_ERROR(CheckAligned("the product's first query in the query layout",
                                  product.first_query * heads * d * 2));
  PT_RETURN_IF_ERROR(CheckAligned("the product's first query in the tokens layout",
                                  product.first_query * shapes.kv_heads * heads * d * 2));
  PT_RETURN_IF_ERROR(
      CheckAligned("the product's first query in the lse layout", product.first_query * heads * 4));
  return CheckAligned("the product's first key in the kv layout", product.first_key * d * 2);
}

// scale Q K^T (score_dims [batch, heads, queries, keys]), with the product's causal mask the
// keys a query must not see at the lowest float. The lowest float rather than -inf, as
// cuDNN's frontend masks: exp of it is exactly 0 and a subtraction of two of them is no NaN.
int64_t MaskedScores(GraphBuilder& g, const ShardShapes& shapes, const RingProduct& product,
                     int64_t query, int64_t keys, const std::vector<int64_t>& score_dims) {
  using T = GraphDataType;
  using K = GraphOpKind;
  const int64_t scale =
      g.Scalar(kAttentionScaleUid, 1.0f / std::sqrt(static_cast<float>(shapes.head_dim)));
  const int64_t products = g.Op(K::kMatmul, {query, keys}, score_dims);
  const int64_t scores = g.Op(K::kMultiply, {products, scale}, score_dims);
  if (product.mask == RingMask::kNone) return scores;
  const int64_t masked_score =
      g.Scalar(kAttentionMaskedScoreUid, std::numeric_limits<float>::lowest());
  // Causal: query row i sees key column j <= i (on the diagonal rows and columns count
  // positions from the same token); aligned bottom-right, j <= i + keys - queries.
  int64_t rows = g.Op(K::kRowIndex, {scores}, score_dims, T::kInt32, T::kInt32);
  if (product.mask == RingMask::kCausalBottomRight) {
    const int64_t key_count =
        g.Scalar(kAttentionKeyCountUid, static_cast<float>(product.keys), T::kInt32);
    const int64_t query_count =
        g.Scalar(kAttentionQueryCountUid, static_cast<float>(product.queries), T::kInt32);
    rows = g.Op(K::kAdd, {rows, key_count}, score_dims, T::kInt32, T::kInt32);
    rows = g.Op(K::kSubtract, {rows, query_count}, score_dims, T::kInt32, T::kInt32);
  }
  const int64_t columns = g.Op(K::kColumnIndex, {scores}, score_dims, T::kInt32, T::kInt32);
  const int64_t visible =
      g.Op(K::kGreaterEqual, {rows, columns}, score_dims, T::kBoolean, T::kBoolean);
  return g.Op(K::kSelect, {scores, masked_score, visible}, score_dims);
}

}  // namespace

absl::StatusOr<AttentionGraph> AttentionForwardGraph(const ShardShapes& shapes,
                                                     const RingProduct& product) {
  PT_RETURN_IF_ERROR(CheckProduct(shapes, product));
  PT_RETURN_IF_ERROR(CheckOffsetsAligned(shapes, product));
  const int64_t batch = shapes.micro_batch * shapes.kv_heads;  // b G
  const int64_t heads = shapes.QueryHeadsPerKvHead();          // H
  const int64_t n = shapes.sequence_per_rank;
  const int64_t d = shapes.head_dim;
  const int64_t queries = product.queries;
  const int64_t keys_count = product.keys;
  const int64_t key_tokens = KeyTokens(shapes, product);
  using T = GraphDataType;
  using K = GraphOpKind;

  GraphBuilder g;
  const std::vector<int64_t> query_dims = {batch, heads, queries, d};
  const std::vector<int64_t> query_strides = {n * heads * d, d, heads * d, 1};
  const int64_t query_offset = product.first_query * heads * d;
  const int64_t kv_offset = product.first_key * d;
  const int64_t query =
      g.Tensor(kAttentionQueryUid, query_dims, query_strides, T::kBfloat16, 0, query_offset);
  const int64_t keys = g.Tensor(kAttentionKeyTransposedUid, {batch, 1, d, keys_count},
                                {key_tokens * d, key_tokens * d, 1, d}, T::kBfloat16, 0, kv_offset);
  const int64_t values =
      g.Tensor(kAttentionValueUid, {batch, 1, keys_count, d},
               {key_tokens * d, key_tokens * d, d, 1}, T::kBfloat16, 0, kv_offset);
  const int64_t output =
      g.Tensor(kAttentionOutputUid, query_dims, query_strides, T::kBfloat16, 0, query_offset);
  // lse layout [b, G, n, H].
  const int64_t stats =
      g.Tensor(kAttentionStatsUid, {batch, heads, queries, 1}, {n * heads, 1, heads, 1}, T::kFloat,
               0, product.first_query * heads);

  const std::vector<int64_t> score_dims = {batch, heads, queries, keys_count};
  const std::vector<int64_t> row_dims = {batch, heads, queries, 1};
  const int64_t masked = MaskedScores(g, shapes, product, query, keys, score_dims);
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

absl::StatusOr<AttentionGraph> CausalAttentionForwardGraph(const ShardShapes& shapes) {
  PT_RETURN_IF_ERROR(CheckOneGraph(shapes));
  return AttentionForwardGraph(shapes, WholeCausal(shapes));
}

absl::StatusOr<AttentionGraph> AttentionBackwardGraph(const ShardShapes& shapes,
                                                      const RingProduct& product) {
  PT_RETURN_IF_ERROR(CheckProduct(shapes, product));
  const int64_t batch = shapes.kv_heads;               // G, one sequence
  const int64_t heads = shapes.QueryHeadsPerKvHead();  // H
  const int64_t n = shapes.sequence_per_rank;
  const int64_t d = shapes.head_dim;
  const int64_t queries = product.queries;
  const int64_t keys_count = product.keys;
  const int64_t key_tokens = KeyTokens(shapes, product);
  using T = GraphDataType;
  using K = GraphOpKind;

  // Elements of one sequence in each layout; cuDNN takes 16-byte aligned pointers only.
  const int64_t query_part = batch * n * heads * d;
  const int64_t kv_part = batch * key_tokens * d;
  const int64_t lse_part = batch * n * heads;
  for (const auto& [layout, bytes] :
       {std::pair{"query", query_part * 2}, std::pair{"kv", kv_part * 2},
        std::pair{"lse", lse_part * 4}}) {
    PT_RETURN_IF_ERROR(
        CheckAligned(absl::StrCat("one sequence's part of the ", layout, " layout"), bytes));
  }
  PT_RETURN_IF_ERROR(CheckOffsetsAligned(shapes, product));

  GraphBuilder g;
  g.SetExecutions(shapes.micro_batch);
  const std::vector<int64_t> query_dims = {batch, heads, queries, d};
  const std::vector<int64_t> query_strides = {n * heads * d, d, heads * d, 1};
  const std::vector<int64_t> tokens_strides = {heads * d, d, batch * heads * d, 1};
  const std::vector<int64_t> kv_dims = {batch, 1, keys_count, d};
  const std::vector<int64_t> kv_strides = {key_tokens * d, key_tokens * d, d, 1};
  const int64_t query_offset = product.first_query * heads * d;
  const int64_t tokens_offset = product.first_query * batch * heads * d;
  const int64_t kv_offset = product.first_key * d;
  const int64_t query = g.Tensor(kAttentionQueryUid, query_dims, query_strides, T::kBfloat16,
                                 query_part, query_offset);
  const int64_t keys = g.Tensor(kAttentionKeyTransposedUid, SwapLastTwo(kv_dims),
                                SwapLastTwo(kv_strides), T::kBfloat16, kv_part, kv_offset);
  const int64_t values = g.Tensor(kAttentionValueTransposedUid, SwapLastTwo(kv_dims),
                                  SwapLastTwo(kv_strides), T::kBfloat16, kv_part, kv_offset);
  const int64_t output = g.Tensor(kAttentionOutputTokensUid, query_dims, tokens_strides,
                                  T::kBfloat16, query_part, tokens_offset);
  const int64_t d_output = g.Tensor(kAttentionOutputGradientUid, query_dims, tokens_strides,
                                    T::kBfloat16, query_part, tokens_offset);
  const int64_t stats =
      g.Tensor(kAttentionStatsUid, {batch, heads, queries, 1}, {n * heads, 1, heads, 1}, T::kFloat,
               lse_part, product.first_query * heads);
  const int64_t d_query = g.Tensor(kAttentionQueryGradientUid, query_dims, query_strides,
                                   T::kBfloat16, query_part, query_offset);
  const int64_t d_keys =
      g.Tensor(kAttentionKeyGradientUid, kv_dims, kv_strides, T::kBfloat16, kv_part, kv_offset);
  const int64_t d_values =
      g.Tensor(kAttentionValueGradientUid, kv_dims, kv_strides, T::kBfloat16, kv_part, kv_offset);
  const int64_t one = g.Scalar(kAttentionOneUid, 1.0f);

  const std::vector<int64_t> score_dims = {batch, heads, queries, keys_count};
  const std::vector<int64_t> row_dims = {batch, heads, queries, 1};
  // softmax_sum = rowsum(dO * O) x 1 (the frontend's dropout scale), non-virtual in the
  // workspace, packed [G, H, queries, 1]; the virtual product has the strides the frontend
  // gives it.
  const int64_t products = g.StridedOp(K::kMultiply, {d_output, output}, query_dims,
                                       {heads * queries * d, queries * d, heads * d, 1});
  const int64_t row_products = g.Op(K::kReduceSum, {products}, row_dims);
  const int64_t softmax_sum = g.Workspace(kAttentionRowSumsUid, row_dims, false);
  g.OpInto(K::kMultiply, {row_products, one}, softmax_sum);

  // P from the forward's statistics; dV = P^T dO.
  const int64_t masked = MaskedScores(g, shapes, product, query, keys, score_dims);
  const int64_t shifted = g.Op(K::kSubtract, {masked, stats}, score_dims);
  const int64_t probabilities = g.Op(K::kExp, {shifted}, score_dims);
  const int64_t probabilities_t = g.Transposed(probabilities, T::kBfloat16);
  // A product over the group's H query heads, summed over them into the kv head (GQA), or
  // straight into it when H = 1.
  auto head_sum = [&](int64_t left, int64_t right, int64_t gradient) {
    if (heads == 1) return g.OpInto(K::kMatmul, {left, right}, gradient);
    const int64_t full =
        g.Op(K::kMatmul, {left, right}, {batch, heads, keys_count, d}, T::kBfloat16);
    return g.OpInto(K::kReduceSum, {full}, gradient);
  };
  head_sum(probabilities_t, d_output, d_values);

  // dS = P (dO V^T x 1 - softmax_sum) x scale; dK = dS^T Q.
  const int64_t d_probabilities = g.Op(K::kMatmul, {d_output, values}, score_dims);
  const int64_t unscaled = g.Op(K::kMultiply, {d_probabilities, one}, score_dims);
  const int64_t centred = g.Op(K::kSubtract, {unscaled, softmax_sum}, score_dims);
  const int64_t d_scores_unscaled = g.Op(K::kMultiply, {centred, probabilities}, score_dims);
  const int64_t d_scores = g.Op(K::kMultiply, {d_scores_unscaled, kAttentionScaleUid}, score_dims);
  head_sum(g.Transposed(d_scores, T::kBfloat16), query, d_keys);

  // dQ = dS K, accumulated in fp32 in the workspace, then converted.
  const int64_t keys_untransposed = g.Transposed(keys, T::kBfloat16);
  const int64_t d_query_sum = g.Workspace(kAttentionQueryGradientSumUid, query_dims, true);
  g.OpInto(K::kMatmul, {d_scores, keys_untransposed}, d_query_sum);
  g.OpInto(K::kIdentity, {d_query_sum}, d_query);
  return std::move(g).Build();
}

absl::StatusOr<AttentionGraph> CausalAttentionBackwardGraph(const ShardShapes& shapes) {
  PT_RETURN_IF_ERROR(CheckOneGraph(shapes));
  return AttentionBackwardGraph(shapes, WholeCausal(shapes));
}

absl::StatusOr<std::vector<RingProduct>> AllGatherProducts(const ShardShapes& shapes,
                                                           int64_t rank) {
  const int64_t c = shapes.context_parallel;
  const int64_t n = shapes.sequence_per_rank;
  if (c < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("context_parallel (", c, ") must be at least 2 for all_gather's halves"));
  }
  if (rank < 0 || rank >= c) {
    return absl::InvalidArgumentError(
        absl::StrCat("context rank (", rank, ") must be in [0, ", c, ")"));
  }
  if (n <= 0 || n % 2 != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("tokens per rank (", n, ") must be even and positive"));
  }
  const int64_t half = n / 2;  // s/(2c) positions of a chunk
  std::vector<RingProduct> products;
  // Chunk r ends at position (r + 1) s/(2c), chunk 2c-1-r at (2c - r) s/(2c).
  for (const auto& [first_query, chunk] :
       {std::pair{int64_t{0}, rank}, std::pair{half, 2 * c - 1 - rank}}) {
    products.push_back(
        {first_query, half, 0, (chunk + 1) * half, RingMask::kCausalBottomRight, true});
  }
  return products;
}

int64_t AllGatherKeyValueBytes(const ShardShapes& shapes) {
  const int64_t bytes = 2 * shapes.micro_batch * shapes.kv_heads * shapes.sequence *
                        shapes.head_dim * GraphDataTypeBytes(GraphDataType::kBfloat16);
  return (bytes + kGraphWorkspaceAlignment - 1) / kGraphWorkspaceAlignment *
         kGraphWorkspaceAlignment;
}

int64_t FusedBackwardGradientBytes(const ShardShapes& shapes) {
  const int64_t bytes = 2 * shapes.micro_batch * shapes.kv_heads * shapes.sequence_per_rank *
                        shapes.head_dim * GraphDataTypeBytes(GraphDataType::kBfloat16);
  return (bytes + kGraphWorkspaceAlignment - 1) / kGraphWorkspaceAlignment *
         kGraphWorkspaceAlignment;
}

}  // namespace paratune
