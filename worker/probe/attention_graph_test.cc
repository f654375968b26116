#include "worker/probe/attention_graph.h"

#include <array>
#include <cmath>
#include <map>
#include <set>

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

TEST(AttentionGraphTest, EveryOpReadsDefinedTensorsAndEveryIntermediateIsWrittenOnce) {
  const absl::StatusOr<AttentionGraph> graph = CausalAttentionForwardGraph(Shapes());
  ASSERT_TRUE(graph.ok()) << graph.status();
  std::set<int64_t> uids;
  for (const GraphTensor& tensor : graph->tensors) {
    EXPECT_TRUE(uids.insert(tensor.uid).second) << "duplicate uid " << tensor.uid;
    EXPECT_EQ(tensor.dims.size(), 4u);
    EXPECT_EQ(tensor.strides.size(), 4u);
  }
  const std::set<int64_t> inputs = {kAttentionQueryUid, kAttentionKeyTransposedUid,
                                    kAttentionValueUid, kAttentionScaleUid,
                                    kAttentionMaskedScoreUid};
  std::set<int64_t> defined = inputs;
  std::map<int64_t, int> reads;
  for (const GraphOp& op : graph->ops) {
    for (int64_t input : op.inputs) {
      EXPECT_TRUE(defined.count(input)) << "op reads " << input << " before it is written";
      ++reads[input];
    }
    EXPECT_FALSE(inputs.count(op.output)) << "op writes input " << op.output;
    EXPECT_TRUE(defined.insert(op.output).second) << op.output << " written twice";
  }
  EXPECT_TRUE(defined.count(kAttentionOutputUid));
  EXPECT_TRUE(defined.count(kAttentionStatsUid));
  for (const GraphTensor& tensor : graph->tensors) {
    if (tensor.is_virtual) {
      EXPECT_GT(reads[tensor.uid], 0) << tensor.uid << " never read";
    }
  }
}

TEST(AttentionGraphTest, OpShapesAgree) {
  const absl::StatusOr<AttentionGraph> graph = CausalAttentionForwardGraph(Shapes());
  ASSERT_TRUE(graph.ok()) << graph.status();
  for (const GraphOp& op : graph->ops) {
    const std::vector<int64_t>& in = graph->Find(op.inputs[0])->dims;
    const std::vector<int64_t>& out = graph->Find(op.output)->dims;
    switch (op.kind) {
      case GraphOpKind::kMatmul: {
        const std::vector<int64_t>& right = graph->Find(op.inputs[1])->dims;
        EXPECT_EQ(in[3], right[2]);
        EXPECT_THAT(out, ElementsAre(in[0], in[1], in[2], right[3]));
        break;
      }
      case GraphOpKind::kReduceMax:
      case GraphOpKind::kReduceSum:
        EXPECT_THAT(out, ElementsAre(in[0], in[1], in[2], 1));
        break;
      default:
        // Elementwise ops broadcast the row statistics and scalars over their first input.
        EXPECT_EQ(out, in) << static_cast<int>(op.kind);
    }
  }
}

TEST(AttentionGraphTest, TheMaskKeepsKeysAtOrBeforeTheQuery) {
  const absl::StatusOr<AttentionGraph> graph = CausalAttentionForwardGraph(Shapes());
  ASSERT_TRUE(graph.ok()) << graph.status();
  std::map<int64_t, GraphOpKind> producer;
  for (const GraphOp& op : graph->ops) producer[op.output] = op.kind;
  int selects = 0;
  for (const GraphOp& op : graph->ops) {
    if (op.kind != GraphOpKind::kSelect) continue;
    ++selects;
    ASSERT_EQ(op.inputs.size(), 3u);
    EXPECT_EQ(op.inputs[1], kAttentionMaskedScoreUid);
    const GraphOp* condition = nullptr;
    for (const GraphOp& other : graph->ops) {
      if (other.output == op.inputs[2]) condition = &other;
    }
    ASSERT_NE(condition, nullptr);
    EXPECT_EQ(condition->kind, GraphOpKind::kGreaterEqual);
    EXPECT_EQ(producer[condition->inputs[0]], GraphOpKind::kRowIndex);
    EXPECT_EQ(producer[condition->inputs[1]], GraphOpKind::kColumnIndex);
  }
  EXPECT_EQ(selects, 1);
}

TEST(AttentionGraphTest, ContextParallelismIsNotOneGraph) {
  const absl::StatusOr<AttentionGraph> graph = CausalAttentionForwardGraph(Shapes(2));
  EXPECT_EQ(graph.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(graph.status().message(), HasSubstr("context_parallel 2"));
}

}  // namespace
}  // namespace paratune
