#include "worker/probe/attention_graph.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Llama-3.1-8B's attention at tensor parallelism 4: 8 query and 2 kv heads on the rank.
ShardShapes Shapes(int64_t context_parallel = 1) {
  ShardShapes x;
  x.micro_batch = 2;
  x.sequence = 4096;
  x.context_parallel = context_parallel;
  x.sequence_per_rank = x.sequence / context_parallel;
  x.head_dim = 128;
  x.query_heads = 8;
  x.kv_heads = 2;
  return x;
}

// Both graphs, for the tests that hold for each.
std::vector<AttentionGraph> BothGraphs(const ShardShapes& shapes) {
  std::vector<AttentionGraph> graphs;
  for (const auto build : {CausalAttentionForwardGraph, CausalAttentionBackwardGraph}) {
    absl::StatusOr<AttentionGraph> graph = build(shapes);
    EXPECT_TRUE(graph.ok()) << graph.status();
    if (graph.ok()) graphs.push_back(*std::move(graph));
  }
  return graphs;
}

// The ring's three kinds of product on a rank of n tokens (context_parallel_ring.h): the
// diagonal, every query against the first half of the keys, the second half of the queries
// against every key.
std::vector<RingProduct> RingProducts(int64_t n) {
  return {{0, n, 0, n, RingMask::kCausal},
          {0, n, 0, n / 2, RingMask::kNone},
          {n / 2, n / 2, 0, n, RingMask::kNone}};
}

// Forward and backward graphs of `products`, with the product each was built for.
std::vector<std::pair<RingProduct, AttentionGraph>> ProductGraphs(
    const ShardShapes& shapes, const std::vector<RingProduct>& products) {
  std::vector<std::pair<RingProduct, AttentionGraph>> graphs;
  for (const RingProduct& product : products) {
    for (const auto build : {AttentionForwardGraph, AttentionBackwardGraph}) {
      absl::StatusOr<AttentionGraph> graph = build(shapes, product);
      EXPECT_TRUE(graph.ok()) << graph.status();
      if (graph.ok()) graphs.push_back({product, *std::move(graph)});
    }
  }
  return graphs;
}

// Forward and backward graphs of every ring product at `shapes`' context parallelism.
std::vector<std::pair<RingProduct, AttentionGraph>> RingGraphs(const ShardShapes& shapes) {
  return ProductGraphs(shapes, RingProducts(shapes.sequence_per_rank));
}

// Forward and backward graphs of all_gather's two products on context rank `rank`.
std::vector<std::pair<RingProduct, AttentionGraph>> AllGatherGraphs(const ShardShapes& shapes,
                                                                    int64_t rank) {
  const absl::StatusOr<std::vector<RingProduct>> products = AllGatherProducts(shapes, rank);
  EXPECT_TRUE(products.ok()) << products.status();
  return products.ok() ? ProductGraphs(shapes, *products)
                       : std::vector<std::pair<RingProduct, AttentionGraph>>{};
}

// Every product graph the probe builds at context parallelism 2: the ring's and those of
// all_gather's ranks.
std::vector<std::pair<RingProduct, AttentionGraph>> ContextParallelGraphs() {
  std::vector<std::pair<RingProduct, AttentionGraph>> graphs = RingGraphs(Shapes(2));
  for (int64_t rank : {0, 1}) {
    for (auto& product_graph : AllGatherGraphs(Shapes(2), rank)) {
      graphs.push_back(std::move(product_graph));
    }
  }
  return graphs;
}

// Every graph the probe builds: the whole causal ones, the ring's and all_gather's.
std::vector<AttentionGraph> AllGraphs() {
  std::vector<AttentionGraph> graphs = BothGraphs(Shapes());
  for (auto& [product, graph] : ContextParallelGraphs()) graphs.push_back(std::move(graph));
  return graphs;
}

int64_t Offset(const GraphTensor& tensor, const std::vector<int64_t>& index) {
  int64_t offset = 0;
  for (size_t i = 0; i < index.size(); ++i) offset += index[i] * tensor.strides[i];
  return offset;
}

TEST(AttentionGraphTest, TensorsViewTheProbesLayoutsInPlace) {
  const absl::StatusOr<AttentionGraph> graph = CausalAttentionForwardGraph(Shapes());
  ASSERT_TRUE(graph.ok()) << graph.status();
  const int64_t G = 2, H = 4, n = 4096, d = 128;
  const GraphTensor& query = *graph->Find(kAttentionQueryUid);
  EXPECT_THAT(query.dims, ElementsAre(2 * G, H, n, d));
  const GraphTensor& keys = *graph->Find(kAttentionKeyTransposedUid);
  EXPECT_THAT(keys.dims, ElementsAre(2 * G, 1, d, n));
  const GraphTensor& values = *graph->Find(kAttentionValueUid);
  EXPECT_THAT(values.dims, ElementsAre(2 * G, 1, n, d));
  const GraphTensor& stats = *graph->Find(kAttentionStatsUid);
  EXPECT_THAT(stats.dims, ElementsAre(2 * G, H, n, 1));
  EXPECT_EQ(graph->Find(kAttentionOutputUid)->strides, query.strides);

  // Element (sequence b, kv head g, token i, query head h, e) of the layouts of
  // attention_kernels.h: query [b, G, n, H, d], kv [b, G, n, d], lse [b, G, n, H].
  for (const auto& [b, g, i, h, e] : std::vector<std::array<int64_t, 5>>{
           {0, 0, 0, 0, 0}, {1, 1, n - 1, H - 1, d - 1}, {1, 0, 17, 2, 5}, {0, 1, 300, 3, 64}}) {
    const int64_t batch = b * G + g;
    EXPECT_EQ(Offset(query, {batch, h, i, e}), (((b * G + g) * n + i) * H + h) * d + e);
    EXPECT_EQ(Offset(keys, {batch, 0, e, i}), ((b * G + g) * n + i) * d + e);
    EXPECT_EQ(Offset(values, {batch, 0, i, e}), ((b * G + g) * n + i) * d + e);
    EXPECT_EQ(Offset(stats, {batch, h, i, 0}), ((b * G + g) * n + i) * H + h);
  }
  for (const GraphTensor* bound : {&query, &keys, &values, &stats}) {
    EXPECT_FALSE(bound->is_virtual);
    EXPECT_FALSE(bound->value.has_value());
  }
  EXPECT_EQ(query.type, GraphDataType::kBfloat16);
  EXPECT_EQ(stats.type, GraphDataType::kFloat);
  EXPECT_FLOAT_EQ(*graph->Find(kAttentionScaleUid)->value, 1 / std::sqrt(128.0f));
}

// Every op reads the bound inputs, scalars or earlier outputs; every output, virtual and
// workspace tensor is written once, and every intermediate is read.
void ExpectOrdered(const AttentionGraph& graph, const std::set<int64_t>& inputs,
                   const std::set<int64_t>& outputs) {
  std::set<int64_t> uids;
  for (const GraphTensor& tensor : graph.tensors) {
    EXPECT_TRUE(uids.insert(tensor.uid).second) << "duplicate uid " << tensor.uid;
    EXPECT_EQ(tensor.dims.size(), 4u);
    EXPECT_EQ(tensor.strides.size(), 4u);
    const bool bound = !tensor.is_virtual && !tensor.value && tensor.workspace_offset < 0;
    if (bound || tensor.value) {
      EXPECT_TRUE(inputs.count(tensor.uid) || outputs.count(tensor.uid)) << tensor.uid;
    }
  }
  for (const std::set<int64_t>& named : {inputs, outputs}) {
    for (int64_t uid : named) EXPECT_NE(graph.Find(uid), nullptr) << uid;
  }
  std::set<int64_t> defined = inputs;
  std::map<int64_t, int> reads;
  for (const GraphOp& op : graph.ops) {
    for (int64_t input : op.inputs) {
      EXPECT_TRUE(defined.count(input)) << "op reads " << input << " before it is written";
      ++reads[input];
    }
    EXPECT_FALSE(inputs.count(op.output)) << "op writes input " << op.output;
    EXPECT_TRUE(defined.insert(op.output).second) << op.output << " written twice";
  }
  for (int64_t output : outputs) EXPECT_TRUE(defined.count(output)) << output;
  for (const GraphTensor& tensor : graph.tensors) {
    if (tensor.is_virtual || tensor.workspace_offset >= 0) {
      EXPECT_GT(reads[tensor.uid], 0) << tensor.uid << " never read";
    }
  }
}

TEST(AttentionGraphTest, EveryOpReadsDefinedTensorsAndEveryIntermediateIsWrittenOnce) {
  const absl::StatusOr<AttentionGraph> forward = CausalAttentionForwardGraph(Shapes());
  ASSERT_TRUE(forward.ok()) << forward.status();
  ExpectOrdered(*forward,
                {kAttentionQueryUid, kAttentionKeyTransposedUid, kAttentionValueUid,
                 kAttentionScaleUid, kAttentionMaskedScoreUid},
                {kAttentionOutputUid, kAttentionStatsUid});
  for (int64_t query_heads : {8, 2}) {  // GQA, and one query head per kv head
    ShardShapes shapes = Shapes();
    shapes.query_heads = query_heads;
    const absl::StatusOr<AttentionGraph> backward = CausalAttentionBackwardGraph(shapes);
    ASSERT_TRUE(backward.ok()) << backward.status();
    ExpectOrdered(
        *backward,
        {kAttentionQueryUid, kAttentionKeyTransposedUid, kAttentionValueTransposedUid,
         kAttentionOutputTokensUid, kAttentionOutputGradientUid, kAttentionStatsUid,
         kAttentionScaleUid, kAttentionMaskedScoreUid, kAttentionOneUid},
        {kAttentionQueryGradientUid, kAttentionKeyGradientUid, kAttentionValueGradientUid});
  }
}

TEST(AttentionGraphTest, OpShapesAgree) {
  for (const AttentionGraph& graph : AllGraphs()) {
    for (const GraphOp& op : graph.ops) {
      const GraphTensor& in = *graph.Find(op.inputs[0]);
      const GraphTensor& out = *graph.Find(op.output);
      switch (op.kind) {
        case GraphOpKind::kMatmul: {
          // Batched over the first two dims; a kv tensor's one head is shared by the H heads.
          const std::vector<int64_t>& right = graph.Find(op.inputs[1])->dims;
          EXPECT_EQ(in.dims[3], right[2]);
          EXPECT_EQ(in.dims[0], right[0]);
          EXPECT_TRUE(right[1] == in.dims[1] || right[1] == 1) << right[1];
          EXPECT_THAT(out.dims, ElementsAre(in.dims[0], in.dims[1], in.dims[2], right[3]));
          break;
        }
        case GraphOpKind::kReduceMax:
        case GraphOpKind::kReduceSum: {
          int reduced = 0;
          for (int i = 0; i < 4; ++i) {
            EXPECT_TRUE(out.dims[i] == in.dims[i] || out.dims[i] == 1) << i;
            reduced += out.dims[i] != in.dims[i];
          }
          EXPECT_EQ(reduced, 1);
          break;
        }
        case GraphOpKind::kReshape:
          // A transposed view: the last two dims swap with their strides.
          EXPECT_THAT(out.dims, ElementsAre(in.dims[0], in.dims[1], in.dims[3], in.dims[2]));
          EXPECT_THAT(out.strides,
                      ElementsAre(in.strides[0], in.strides[1], in.strides[3], in.strides[2]));
          break;
        default:
          // Elementwise ops broadcast the row statistics and scalars over their first input.
          EXPECT_EQ(out.dims, in.dims) << static_cast<int>(op.kind);
          for (size_t i = 1; i < op.inputs.size(); ++i) {
            const std::vector<int64_t>& other = graph.Find(op.inputs[i])->dims;
            for (int j = 0; j < 4; ++j) {
              EXPECT_TRUE(other[j] == in.dims[j] || other[j] == 1) << op.inputs[i];
            }
          }
      }
    }
  }
}

TEST(AttentionGraphTest, TheMaskKeepsKeysAtOrBeforeTheQuery) {
  for (const AttentionGraph& graph : BothGraphs(Shapes())) {
    std::map<int64_t, GraphOpKind> producer;
    for (const GraphOp& op : graph.ops) producer[op.output] = op.kind;
    int selects = 0;
    for (const GraphOp& op : graph.ops) {
      if (op.kind != GraphOpKind::kSelect) continue;
      ++selects;
      ASSERT_EQ(op.inputs.size(), 3u);
      EXPECT_EQ(op.inputs[1], kAttentionMaskedScoreUid);
      const GraphOp* condition = nullptr;
      for (const GraphOp& other : graph.ops) {
        if (other.output == op.inputs[2]) condition = &other;
      }
      ASSERT_NE(condition, nullptr);
      EXPECT_EQ(condition->kind, GraphOpKind::kGreaterEqual);
      EXPECT_EQ(producer[condition->inputs[0]], GraphOpKind::kRowIndex);
      EXPECT_EQ(producer[condition->inputs[1]], GraphOpKind::kColumnIndex);
    }
    EXPECT_EQ(selects, 1);
  }
}

// The ring's diagonal product is masked as the whole causal graph (its step 0 at c > 1,
// which the one-graph builder refuses); its other products have no mask at all: no index,
// comparison or select op and no masked-score scalar.
TEST(AttentionGraphTest, OnlyTheRingsDiagonalProductIsMasked) {
  for (const auto& [product, graph] : RingGraphs(Shapes(2))) {
    const bool causal = product.mask == RingMask::kCausal;
    int masking_ops = 0;
    for (const GraphOp& op : graph.ops) {
      masking_ops += op.kind == GraphOpKind::kSelect || op.kind == GraphOpKind::kGreaterEqual ||
                     op.kind == GraphOpKind::kRowIndex || op.kind == GraphOpKind::kColumnIndex;
    }
    EXPECT_EQ(masking_ops, causal ? 4 : 0) << product.first_query << " " << product.keys;
    EXPECT_EQ(graph.Find(kAttentionMaskedScoreUid) != nullptr, causal);
    EXPECT_NE(graph.Find(kAttentionScaleUid), nullptr);
  }
}

// Every ring and all_gather graph reads its inputs and writes its outputs in order, as the
// whole ones.
TEST(AttentionGraphTest, ProductGraphsAreOrdered) {
  for (const auto& [product, graph] : ContextParallelGraphs()) {
    std::set<int64_t> scalars = {kAttentionScaleUid};
    if (product.mask != RingMask::kNone) scalars.insert(kAttentionMaskedScoreUid);
    if (product.mask == RingMask::kCausalBottomRight) {
      scalars.insert({kAttentionKeyCountUid, kAttentionQueryCountUid});
    }
    if (graph.Find(kAttentionOutputUid) != nullptr) {
      std::set<int64_t> inputs = {kAttentionQueryUid, kAttentionKeyTransposedUid,
                                  kAttentionValueUid};
      inputs.insert(scalars.begin(), scalars.end());
      ExpectOrdered(graph, inputs, {kAttentionOutputUid, kAttentionStatsUid});
    } else {
      std::set<int64_t> inputs = {
          kAttentionQueryUid,        kAttentionKeyTransposedUid,  kAttentionValueTransposedUid,
          kAttentionOutputTokensUid, kAttentionOutputGradientUid, kAttentionStatsUid,
          kAttentionOneUid};
      inputs.insert(scalars.begin(), scalars.end());
      ExpectOrdered(
          graph, inputs,
          {kAttentionQueryGradientUid, kAttentionKeyGradientUid, kAttentionValueGradientUid});
    }
  }
}

// A product's tensors are the layouts' strided views with the product's rows: element (b, g,
// local token i, h, e) of a query in the product, or of a key, lands at the pointer + offset
// (+ b x execution_stride in the backward) where attention_kernels.h's layouts hold it; the
// keys of all_gather's products at position j of the position-ordered [2, b, G, s, d].
TEST(AttentionGraphTest, ProductsViewTheirTokensOfTheLayouts) {
  const int64_t G = 2, H = 4, n = 2048, s = 4096, d = 128;
  for (const auto& [product, graph] : ContextParallelGraphs()) {
    const int64_t key_tokens = product.gathered_keys ? s : n;
    const bool backward = graph.Find(kAttentionOutputUid) == nullptr;
    // Forward: batch b G; backward: batch G, one sequence per execution.
    auto at = [&](const GraphTensor& t, int64_t b, int64_t g, std::vector<int64_t> index) {
      index.insert(index.begin(), backward ? g : b * G + g);
      return t.offset + (backward ? b * t.execution_stride : 0) + Offset(t, index);
    };
    const int64_t queries = product.queries, keys = product.keys;
    const GraphTensor& query = *graph.Find(kAttentionQueryUid);
    const GraphTensor& key_t = *graph.Find(kAttentionKeyTransposedUid);
    const GraphTensor& stats = *graph.Find(kAttentionStatsUid);
    EXPECT_THAT(query.dims, ElementsAre(backward ? G : 2 * G, H, queries, d));
    EXPECT_THAT(key_t.dims, ElementsAre(backward ? G : 2 * G, 1, d, keys));
    EXPECT_THAT(stats.dims, ElementsAre(backward ? G : 2 * G, H, queries, 1));
    std::vector<const GraphTensor*> query_views = {&query};
    std::vector<const GraphTensor*> kv_views = {};
    std::vector<const GraphTensor*> kv_transposed_views = {&key_t};
    if (backward) {
      query_views.push_back(graph.Find(kAttentionQueryGradientUid));
      kv_transposed_views.push_back(graph.Find(kAttentionValueTransposedUid));
      kv_views = {graph.Find(kAttentionKeyGradientUid), graph.Find(kAttentionValueGradientUid)};
    } else {
      query_views.push_back(graph.Find(kAttentionOutputUid));
      kv_views = {graph.Find(kAttentionValueUid)};
    }
    for (const auto& [b, g, row, h, e] : std::vector<std::array<int64_t, 5>>{
             {0, 0, 0, 0, 0}, {1, 1, 1023, H - 1, d - 1}, {1, 0, 17, 2, 5}, {0, 1, 300, 3, 64}}) {
      const int64_t i = product.first_query + row;       // a local query token of the product
      const int64_t j = product.first_key + row % keys;  // a local key token of the product
      for (const GraphTensor* t : query_views) {
        EXPECT_EQ(at(*t, b, g, {h, row, e}), (((b * G + g) * n + i) * H + h) * d + e) << t->uid;
      }
      EXPECT_EQ(at(stats, b, g, {h, row, 0}), ((b * G + g) * n + i) * H + h);
      for (const GraphTensor* t : kv_views) {
        EXPECT_EQ(at(*t, b, g, {0, row % keys, e}), ((b * G + g) * key_tokens + j) * d + e)
            << t->uid;
      }
      for (const GraphTensor* t : kv_transposed_views) {
        EXPECT_EQ(at(*t, b, g, {0, e, row % keys}), ((b * G + g) * key_tokens + j) * d + e)
            << t->uid;
      }
      if (backward) {
        for (int64_t uid : {kAttentionOutputTokensUid, kAttentionOutputGradientUid}) {
          EXPECT_EQ(at(*graph.Find(uid), b, g, {h, row, e}),
                    (((b * n + i) * G + g) * H + h) * d + e)
              << uid;
        }
      }
    }
    // The backward's workspace tensors hold the product's rows only.
    if (backward) {
      EXPECT_EQ(graph.workspace_tensor_bytes, G * H * queries * 4 + G * H * queries * d * 4);
    }
  }
}

TEST(AttentionGraphTest, ProductsOutsideTheTokensOrOffTheDiagonalAreRefused) {
  const ShardShapes shapes = Shapes(2);  // n = 2048
  for (const auto build : {AttentionForwardGraph, AttentionBackwardGraph}) {
    for (const auto& [product, message] :
         {std::pair{RingProduct{1024, 1025, 0, 2048, RingMask::kNone}, "queries [1024, 2049)"},
          std::pair{RingProduct{0, 2048, -1, 1024, RingMask::kNone}, "keys [-1, 1023)"},
          std::pair{RingProduct{0, 2048, 0, 0, RingMask::kNone}, "keys [0, 0)"},
          std::pair{RingProduct{1024, 1024, 0, 2048, RingMask::kCausal},
                    "first_query 1024, first_key 0"},
          std::pair{RingProduct{0, 1024, 0, 4097, RingMask::kCausalBottomRight, true},
                    "keys [0, 4097) not within the 4096 tokens"},
          std::pair{RingProduct{0, 1024, 0, 1023, RingMask::kCausalBottomRight, true},
                    "fewer keys (1023) than queries (1024)"}}) {
      const absl::StatusOr<AttentionGraph> graph = build(shapes, product);
      EXPECT_EQ(graph.status().code(), absl::StatusCode::kInvalidArgument);
      EXPECT_THAT(graph.status().message(), HasSubstr(message));
    }
  }
}

TEST(AttentionGraphTest, MisalignedProductStartsAreRefused) {
  ShardShapes shapes = Shapes(2);
  shapes.query_heads = shapes.kv_heads = 1;
  shapes.head_dim = 4;  // a key of 8 bytes
  for (const auto build : {AttentionForwardGraph, AttentionBackwardGraph}) {
    const absl::StatusOr<AttentionGraph> graph =
        build(shapes, RingProduct{0, 2048, 1, 1024, RingMask::kNone});
    EXPECT_EQ(graph.status().code(), absl::StatusCode::kUnimplemented);
    EXPECT_THAT(graph.status().message(),
                HasSubstr("first key in the kv layout is 8 bytes, not a multiple"));
    EXPECT_TRUE(build(shapes, RingProduct{0, 2048, 2, 1024, RingMask::kNone}).ok());
  }
}

// Execution b (sequence b) of the backward graph binds each tensor at its pointer + b x
// execution_stride: element (b, g, i, h, e) lands where attention_kernels.h's layouts hold it,
// with O and dO in the tokens layout [b, n, G, H, d].
TEST(AttentionGraphTest, BackwardTensorsViewTheProbesLayoutsOneSequenceAtATime) {
  const absl::StatusOr<AttentionGraph> graph = CausalAttentionBackwardGraph(Shapes());
  ASSERT_TRUE(graph.ok()) << graph.status();
  const int64_t G = 2, H = 4, n = 4096, d = 128;
  EXPECT_EQ(graph->executions, 2);
  const GraphTensor& query = *graph->Find(kAttentionQueryUid);
  const GraphTensor& keys = *graph->Find(kAttentionKeyTransposedUid);
  const GraphTensor& values = *graph->Find(kAttentionValueTransposedUid);
  const GraphTensor& output = *graph->Find(kAttentionOutputTokensUid);
  const GraphTensor& d_output = *graph->Find(kAttentionOutputGradientUid);
  const GraphTensor& stats = *graph->Find(kAttentionStatsUid);
  const GraphTensor& d_query = *graph->Find(kAttentionQueryGradientUid);
  const GraphTensor& d_keys = *graph->Find(kAttentionKeyGradientUid);
  const GraphTensor& d_values = *graph->Find(kAttentionValueGradientUid);
  for (const GraphTensor* t : {&query, &output, &d_output, &d_query}) {
    EXPECT_THAT(t->dims, ElementsAre(G, H, n, d));
    EXPECT_EQ(t->type, GraphDataType::kBfloat16);
  }
  EXPECT_THAT(keys.dims, ElementsAre(G, 1, d, n));
  EXPECT_THAT(values.dims, ElementsAre(G, 1, d, n));
  EXPECT_THAT(d_keys.dims, ElementsAre(G, 1, n, d));
  EXPECT_THAT(d_values.dims, ElementsAre(G, 1, n, d));
  EXPECT_EQ(d_keys.type, GraphDataType::kBfloat16);
  EXPECT_THAT(stats.dims, ElementsAre(G, H, n, 1));
  EXPECT_EQ(stats.type, GraphDataType::kFloat);

  auto at = [](const GraphTensor& t, int64_t execution, const std::vector<int64_t>& index) {
    return execution * t.execution_stride + Offset(t, index);
  };
  for (const auto& [b, g, i, h, e] : std::vector<std::array<int64_t, 5>>{
           {0, 0, 0, 0, 0}, {1, 1, n - 1, H - 1, d - 1}, {1, 0, 17, 2, 5}, {0, 1, 300, 3, 64}}) {
    const int64_t query_offset = (((b * G + g) * n + i) * H + h) * d + e;
    const int64_t tokens_offset = (((b * n + i) * G + g) * H + h) * d + e;
    const int64_t kv_offset = ((b * G + g) * n + i) * d + e;
    EXPECT_EQ(at(query, b, {g, h, i, e}), query_offset);
    EXPECT_EQ(at(d_query, b, {g, h, i, e}), query_offset);
    EXPECT_EQ(at(output, b, {g, h, i, e}), tokens_offset);
    EXPECT_EQ(at(d_output, b, {g, h, i, e}), tokens_offset);
    EXPECT_EQ(at(keys, b, {g, 0, e, i}), kv_offset);
    EXPECT_EQ(at(values, b, {g, 0, e, i}), kv_offset);
    EXPECT_EQ(at(d_keys, b, {g, 0, i, e}), kv_offset);
    EXPECT_EQ(at(d_values, b, {g, 0, i, e}), kv_offset);
    EXPECT_EQ(at(stats, b, {g, h, i, 0}), ((b * G + g) * n + i) * H + h);
  }
  EXPECT_FLOAT_EQ(*graph->Find(kAttentionScaleUid)->value, 1 / std::sqrt(128.0f));
  EXPECT_FLOAT_EQ(*graph->Find(kAttentionOneUid)->value, 1.0f);
}

// softmax_sum and dQ_accum live in the workspace, fp32, packed, 256-byte aligned and
// disjoint; dQ_accum is accumulated into; bound tensors are not in the workspace.
TEST(AttentionGraphTest, BackwardWorkspaceTensorsAreDisjoint) {
  const absl::StatusOr<AttentionGraph> graph = CausalAttentionBackwardGraph(Shapes());
  ASSERT_TRUE(graph.ok()) << graph.status();
  const int64_t G = 2, H = 4, n = 4096, d = 128;
  const GraphTensor& sums = *graph->Find(kAttentionRowSumsUid);
  const GraphTensor& d_query_sum = *graph->Find(kAttentionQueryGradientSumUid);
  EXPECT_THAT(sums.dims, ElementsAre(G, H, n, 1));
  EXPECT_THAT(d_query_sum.dims, ElementsAre(G, H, n, d));
  EXPECT_THAT(d_query_sum.strides, ElementsAre(H * n * d, n * d, d, 1));
  EXPECT_FALSE(sums.accumulated);
  EXPECT_TRUE(d_query_sum.accumulated);
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (const GraphTensor& t : graph->tensors) {
    if (t.workspace_offset < 0) continue;
    EXPECT_EQ(t.type, GraphDataType::kFloat);
    EXPECT_FALSE(t.is_virtual);
    EXPECT_EQ(t.execution_stride, 0);
    EXPECT_EQ(t.workspace_offset % kGraphWorkspaceAlignment, 0);
    ranges.push_back({t.workspace_offset,
                      t.workspace_offset + t.dims[0] * t.dims[1] * t.dims[2] * t.dims[3] * 4});
  }
  ASSERT_EQ(ranges.size(), 2u);
  std::sort(ranges.begin(), ranges.end());
  EXPECT_LE(ranges[0].second, ranges[1].first);
  EXPECT_LE(ranges[1].second, graph->workspace_tensor_bytes);
  EXPECT_EQ(graph->workspace_tensor_bytes, G * H * n * 4 + G * H * n * d * 4);
}

// With H > 1 query heads per kv head dK and dV are sums over the heads of [G, H, n, d]
// products (the frontend's dK_fullhead and dV_fullhead); with H = 1 the products write them.
TEST(AttentionGraphTest, BackwardSumsTheGroupsHeadsIntoTheKvGradients) {
  for (const auto& [query_heads, producer] :
       {std::pair{8, GraphOpKind::kReduceSum}, std::pair{2, GraphOpKind::kMatmul}}) {
    ShardShapes shapes = Shapes();
    shapes.query_heads = query_heads;
    const absl::StatusOr<AttentionGraph> graph = CausalAttentionBackwardGraph(shapes);
    ASSERT_TRUE(graph.ok()) << graph.status();
    for (int64_t gradient : {kAttentionKeyGradientUid, kAttentionValueGradientUid}) {
      const GraphOp* writer = nullptr;
      for (const GraphOp& op : graph->ops) {
        if (op.output == gradient) writer = &op;
      }
      ASSERT_NE(writer, nullptr);
      EXPECT_EQ(writer->kind, producer) << query_heads;
      if (producer == GraphOpKind::kReduceSum) {
        const GraphTensor& full = *graph->Find(writer->inputs[0]);
        EXPECT_THAT(full.dims, ElementsAre(2, 4, 4096, 128));
        EXPECT_TRUE(full.is_virtual);
      }
    }
  }
}

TEST(AttentionGraphTest, FusedBackwardGradientsAreOneBf16KvLayout) {
  // [2, b, G, n, d] bf16: 2 x 2 x 2 x 4096 x 128 x 2 bytes.
  EXPECT_EQ(FusedBackwardGradientBytes(Shapes()), int64_t{8} << 20);
  ShardShapes odd = Shapes();
  odd.micro_batch = 1;
  odd.kv_heads = 1;
  odd.head_dim = 8;
  odd.sequence = odd.sequence_per_rank = 3;  // 96 bytes, rounded up
  EXPECT_EQ(FusedBackwardGradientBytes(odd), kGraphWorkspaceAlignment);
}

TEST(AttentionGraphTest, BackwardRefusesMisalignedSequences) {
  ShardShapes shapes = Shapes();
  shapes.query_heads = shapes.kv_heads = 1;
  shapes.sequence = shapes.sequence_per_rank = 4095;
  const absl::StatusOr<AttentionGraph> graph = CausalAttentionBackwardGraph(shapes);
  EXPECT_EQ(graph.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(graph.status().message(), HasSubstr("lse layout is 16380 bytes"));
  EXPECT_TRUE(CausalAttentionForwardGraph(shapes).ok());
}

// With all_gather the whole causal graph is refused; the ring's diagonal product over the
// same tokens is not.
TEST(AttentionGraphTest, ContextParallelismIsNotOneGraph) {
  for (const auto build : {CausalAttentionForwardGraph, CausalAttentionBackwardGraph}) {
    const absl::StatusOr<AttentionGraph> graph = build(Shapes(2));
    EXPECT_EQ(graph.status().code(), absl::StatusCode::kUnimplemented);
    EXPECT_THAT(graph.status().message(), HasSubstr("context_parallel 2"));
  }
  for (const auto build : {AttentionForwardGraph, AttentionBackwardGraph}) {
    EXPECT_TRUE(build(Shapes(2), RingProducts(2048)[0]).ok());
  }
}

// all_gather's products on rank r: each query half against the positions up to its chunk's
// end, the half's queries the last of them, as Transformer Engine's
// AttnFuncWithCPAndKVAllGather.
TEST(AttentionGraphTest, AllGatherProductsAreEachHalfAgainstItsPositionPrefix) {
  const ShardShapes shapes = Shapes(4);  // n = 1024: halves of 512 tokens
  const std::vector<std::pair<int64_t, std::array<int64_t, 2>>> expected_keys = {
      {0, {512, 4096}}, {1, {1024, 3584}}, {3, {2048, 2560}}};
  for (const auto& [rank, keys] : expected_keys) {
    const absl::StatusOr<std::vector<RingProduct>> products = AllGatherProducts(shapes, rank);
    ASSERT_TRUE(products.ok()) << products.status();
    ASSERT_EQ(products->size(), 2u);
    for (int half = 0; half < 2; ++half) {
      const RingProduct& p = (*products)[half];
      EXPECT_EQ(p.first_query, half * 512) << rank;
      EXPECT_EQ(p.queries, 512);
      EXPECT_EQ(p.first_key, 0);
      EXPECT_EQ(p.keys, keys[half]) << rank << " " << half;
      EXPECT_EQ(p.mask, RingMask::kCausalBottomRight);
      EXPECT_TRUE(p.gathered_keys);
      // Bottom-right, query i sees key j iff j <= i + keys - queries: the query's position
      // (chunk r, then chunk 2c-1-r, of 512 positions each).
      const int64_t chunk = half == 0 ? rank : 7 - rank;
      for (int64_t i : {int64_t{0}, int64_t{511}}) {
        EXPECT_EQ(i + p.keys - p.queries, chunk * 512 + i) << rank << " " << half;
      }
    }
  }
}

TEST(AttentionGraphTest, AllGatherProductsRefuseShapesWithoutTwoHalves) {
  ShardShapes odd = Shapes(2);
  odd.sequence_per_rank = 2047;
  for (const auto& [shapes, rank, message] :
       {std::tuple{Shapes(1), int64_t{0}, "context_parallel (1)"},
        std::tuple{Shapes(2), int64_t{2}, "context rank (2)"},
        std::tuple{Shapes(2), int64_t{-1}, "context rank (-1)"},
        std::tuple{odd, int64_t{0}, "tokens per rank (2047)"}}) {
    const absl::StatusOr<std::vector<RingProduct>> products = AllGatherProducts(shapes, rank);
    EXPECT_EQ(products.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(products.status().message(), HasSubstr(message));
  }
}

// The bottom-right mask as cudnn-frontend builds causal_mask_bottom_right: the row index plus
// the int32 key count minus the int32 query count, compared with the column index.
TEST(AttentionGraphTest, TheBottomRightMaskShiftsTheRowsByKeysMinusQueries) {
  for (const auto& [product, graph] : AllGatherGraphs(Shapes(2), 1)) {
    std::map<int64_t, const GraphOp*> writer;
    for (const GraphOp& op : graph.ops) writer[op.output] = &op;
    const GraphTensor* key_count = graph.Find(kAttentionKeyCountUid);
    const GraphTensor* query_count = graph.Find(kAttentionQueryCountUid);
    ASSERT_NE(key_count, nullptr);
    ASSERT_NE(query_count, nullptr);
    EXPECT_EQ(key_count->type, GraphDataType::kInt32);
    EXPECT_EQ(query_count->type, GraphDataType::kInt32);
    EXPECT_EQ(key_count->value, static_cast<float>(product.keys));
    EXPECT_EQ(query_count->value, static_cast<float>(product.queries));
    int selects = 0;
    for (const GraphOp& op : graph.ops) {
      if (op.kind != GraphOpKind::kSelect) continue;
      ++selects;
      const GraphOp& compare = *writer.at(op.inputs[2]);
      EXPECT_EQ(compare.kind, GraphOpKind::kGreaterEqual);
      EXPECT_EQ(writer.at(compare.inputs[1])->kind, GraphOpKind::kColumnIndex);
      const GraphOp& subtract = *writer.at(compare.inputs[0]);
      EXPECT_EQ(subtract.kind, GraphOpKind::kSubtract);
      EXPECT_EQ(subtract.compute_type, GraphDataType::kInt32);
      EXPECT_EQ(subtract.inputs[1], kAttentionQueryCountUid);
      const GraphOp& add = *writer.at(subtract.inputs[0]);
      EXPECT_EQ(add.kind, GraphOpKind::kAdd);
      EXPECT_EQ(add.compute_type, GraphDataType::kInt32);
      EXPECT_EQ(add.inputs[1], kAttentionKeyCountUid);
      EXPECT_EQ(writer.at(add.inputs[0])->kind, GraphOpKind::kRowIndex);
    }
    EXPECT_EQ(selects, 1);
  }
  // The other masks have no count scalars.
  for (const auto& [product, graph] : RingGraphs(Shapes(2))) {
    EXPECT_EQ(graph.Find(kAttentionKeyCountUid), nullptr);
    EXPECT_EQ(graph.Find(kAttentionQueryCountUid), nullptr);
  }
}

TEST(AttentionGraphTest, AllGatherKeyValuesAreOnePositionOrderedBf16Layout) {
  // [2, b, G, s, d] bf16: 2 x 2 x 2 x 4096 x 128 x 2 bytes, whatever the context parallelism.
  EXPECT_EQ(AllGatherKeyValueBytes(Shapes(2)), int64_t{8} << 20);
  EXPECT_EQ(AllGatherKeyValueBytes(Shapes(4)), int64_t{8} << 20);
  ShardShapes odd = Shapes(2);
  odd.micro_batch = 1;
  odd.kv_heads = 1;
  odd.head_dim = 8;
  odd.sequence = 6;  // 192 bytes, rounded up
  EXPECT_EQ(AllGatherKeyValueBytes(odd), kGraphWorkspaceAlignment);
}

}  // namespace
}  // namespace paratune
