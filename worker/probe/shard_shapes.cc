#include "worker/probe/shard_shapes.h"

#include <algorithm>

#include "estimator/pipeline_layout.h"

namespace paratune {
namespace {

constexpr int64_t kBf16Bytes = 2;

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

double LinearShape::ForwardFlops() const {
  return 2.0 * static_cast<double>(rows) * static_cast<double>(outputs) *
         static_cast<double>(inputs);
}

ShardShapes ComputeShardShapes(const ModelSpec& model, const TrainingSpec& training,
                               const ParallelConfig& config) {
  ShardShapes x;
  const int64_t t = config.tp();
  x.micro_batch = config.micro_batch();
  x.sequence = training.seq_len();
  x.sequence_per_rank = training.seq_len() / config.cp();
  x.tokens = x.micro_batch * x.sequence_per_rank;
  x.sequence_parallel = config.sequence_parallel() && t > 1;
  x.residual_tokens = x.sequence_parallel ? x.tokens / t : x.tokens;
  x.tensor_parallel = t;
  x.context_parallel = config.cp();
  x.hidden = model.hidden_size();
  x.head_dim = model.hidden_size() / model.num_attention_heads();
  x.query_heads = model.num_attention_heads() / t;
  x.kv_heads = std::max<int64_t>(1, model.num_kv_heads() / t);
  x.ffn = model.ffn_hidden_size() / t;
  x.vocab = CeilDiv(model.vocab_size(), t);
  x.qkv = {x.tokens, (x.query_heads + 2 * x.kv_heads) * x.head_dim, x.hidden};
  x.attention_output = {x.tokens, x.hidden, x.query_heads * x.head_dim};
  x.gate_up = {x.tokens, 2 * x.ffn, x.hidden};
  x.down = {x.tokens, x.hidden, x.ffn};
  x.lm_head = {x.tokens, x.vocab, x.hidden};
  return x;
}

double LayerForwardModelFlops(const ShardShapes& x) {
  const double attention = 4.0 * static_cast<double>(x.tokens) * static_cast<double>(x.sequence) *
                           static_cast<double>(x.query_heads * x.head_dim);
  return x.qkv.ForwardFlops() + x.attention_output.ForwardFlops() + x.gate_up.ForwardFlops() +
         x.down.ForwardFlops() + attention;
}

int64_t StageLayers::TotalLayers() const {
  int64_t total = 0;
  for (int64_t layers : chunk_layers) total += layers;
  return total;
}

int64_t StageLayers::MostLayersPerChunk() const {
  return *std::max_element(chunk_layers.begin(), chunk_layers.end());
}

StageLayers StageLayersOf(const ModelSpec& model, const ParallelConfig& config, int64_t stage) {
  const int64_t p = config.pp();
  const int64_t v = config.virtual_pipeline();
  const int64_t layers = model.num_layers();
  StageLayers stage_layers;
  stage_layers.embedding = stage == 0;
  stage_layers.lm_head = stage == p - 1;
  const bool uneven = LayoutPipeline(layers, p, v).uneven;
  const int64_t per_chunk = uneven ? (layers + 2) / (p * v) : layers / (p * v);
  stage_layers.chunk_layers.assign(v, per_chunk);
  if (uneven) {
    if (stage_layers.embedding) --stage_layers.chunk_layers.front();
    if (stage_layers.lm_head) --stage_layers.chunk_layers.back();
  }
  // Chunk j of the stage is the model's chunk q = j p + stage (Megatron-LM's interleaved
  // schedule). Its first layer: q (L / (p v)) evenly; with the uneven split each chunk has
  // (L + 2) / (p v) slots, the model's first slot the embedding (estimator/moe_memory.cc,
  // ChunkLayers, lays them out the same way).
  for (int64_t j = 0; j < v; ++j) {
    const int64_t q = j * p + stage;
    const int64_t first = !uneven ? q * per_chunk : q == 0 ? 0 : q * per_chunk - 1;
    for (int64_t i = 0; i < stage_layers.chunk_layers[j]; ++i) {
      stage_layers.moe_layers.push_back(model.IsMoeLayer(first + i));
    }
  }
  return stage_layers;
}

int64_t TensorParallelActivationBytes(const ShardShapes& x) {
  return x.tokens * x.hidden * kBf16Bytes;
}

int64_t ContextParallelKvBytes(const ShardShapes& x) {
  return x.context_parallel * 2 * x.tokens * x.kv_heads * x.head_dim * kBf16Bytes;
}

int64_t PipelineBoundaryBytes(const ShardShapes& x) {
  return x.residual_tokens * x.hidden * kBf16Bytes;
}

}  // namespace paratune
