// The shapes of one rank's shard of a Llama model for one micro-batch, the layers of each
// pipeline stage, and the FLOPs and collective sizes that follow from them. Pure arithmetic
// on the estimator's values; the probe allocates and launches from these numbers, and the
// tests check them against the estimator's FLOP and communication formulas.
#ifndef PARATUNE_WORKER_PROBE_SHARD_SHAPES_H_
#define PARATUNE_WORKER_PROBE_SHARD_SHAPES_H_

#include <cstdint>
#include <vector>

#include "estimator/model_spec.h"
#include "estimator/parallel_config.h"
#include "estimator/training_spec.h"

namespace paratune {

// A linear layer's GEMM on one rank, as nn.Linear computes it: out[rows, outputs] =
// in[rows, inputs] x weight[outputs, inputs]^T.
struct LinearShape {
  int64_t rows = 0;
  int64_t outputs = 0;
  int64_t inputs = 0;

  // 2 x rows x outputs x inputs: one multiply-add is two FLOPs.
  double ForwardFlops() const;
  int64_t WeightElements() const { return outputs * inputs; }
};

// One micro-batch on one rank, Megatron-LM's tensor, sequence and context parallel split of
// a Llama layer (SwiGLU MLP: every model of the API is gated).
struct ShardShapes {
  int64_t micro_batch = 0;        // b sequences
  int64_t sequence = 0;           // s, a whole sequence
  int64_t sequence_per_rank = 0;  // s / c tokens of each sequence on this context rank
  int64_t tokens = 0;             // T = b s / c: rows of the linear layers
  // Rows of the residual stream (norms, residual adds, pipeline boundary): T / t with
  // sequence parallelism, T without.
  int64_t residual_tokens = 0;
  bool sequence_parallel = false;  // SP on and t > 1: TP moves activations by all-gather
                                   // and reduce-scatter; otherwise by all-reduce
  int64_t tensor_parallel = 0;     // t
  int64_t context_parallel = 0;    // c
  int64_t hidden = 0;              // h
  int64_t head_dim = 0;            // h / a
  int64_t query_heads = 0;         // a / t
  // k / t, or 1 when t > k: Megatron-LM then replicates each kv head on t / k ranks.
  int64_t kv_heads = 0;
  int64_t ffn = 0;  // f / t
  // Rows of the rank's embedding and LM-head shard: ceil(V / t) (Megatron pads the vocabulary).
  int64_t vocab = 0;

  LinearShape qkv;               // [T, (a/t + 2 kv_heads) d] from [T, h]
  LinearShape attention_output;  // [T, h] from [T, (a/t) d]
  LinearShape gate_up;           // [T, 2 f/t] (gate and up projections) from [T, h]
  LinearShape down;              // [T, h] from [T, f/t]
  LinearShape lm_head;           // [T, ceil(V/t)] from [T, h]

  // Query heads sharing one kv head.
  int64_t QueryHeadsPerKvHead() const { return query_heads / kv_heads; }
};

// The shapes of any rank of `config` (they do not depend on the rank's coordinates).
// `model`, `training` and `config` must be valid together (ParallelConfig::Create).
ShardShapes ComputeShardShapes(const ModelSpec& model, const TrainingSpec& training,
                               const ParallelConfig& config);

// Model FLOPs of one transformer layer's forward pass on one rank for one micro-batch, in
// the convention of the estimator's ModelFlopsPerStep (DESIGN.md §5.3): the four linear
// layers, and attention's two products (QK^T and PV) counted over the whole sequence, 4 T s
// (a/t) d, although the causal mask lets the probe skip about half of them. Backward is
// twice the forward.
double LayerForwardModelFlops(const ShardShapes& shapes);

// The layers of one pipeline stage, split into its virtual-pipeline chunks as Megatron-LM
// does (estimator/pipeline_layout.h): L / (p v) per chunk, or with the uneven split
// (L + 2) / (p v) per chunk except one fewer in stage 0's first chunk and stage p-1's last.
struct StageLayers {
  std::vector<int64_t> chunk_layers;  // v entries
  bool embedding = false;             // stage 0: chunk 0 starts with the embedding
  bool lm_head = false;               // stage p-1: chunk v-1 ends with the final norm,
                                      // the LM head and the cross-entropy loss
  // Per layer of the stage, chunk after chunk: whether it holds experts
  // (ModelSpec::IsMoeLayer of its index in the model); all false for a dense model.
  std::vector<bool> moe_layers;
  int64_t TotalLayers() const;
  int64_t MostLayersPerChunk() const;
};

StageLayers StageLayersOf(const ModelSpec& model, const ParallelConfig& config, int64_t stage);

// Collective sizes in bytes, in nccl-tests' terms (the whole gathered buffer of an
// all-gather, the whole input of a reduce-scatter or all-reduce, a send's message).
//
// One TP all-gather or reduce-scatter of the activations (or all-reduce without sequence
// parallelism): the T x h bf16 tensor, 2 s b h / c bytes (DESIGN.md §5.3).
int64_t TensorParallelActivationBytes(const ShardShapes& shapes);
// The context-parallel all-gather of K and V: c blocks of 2 T kv_heads d bf16 values; each
// rank receives c - 1 of them, the c - 1 ring exchanges of 2 (s/c) b (k h/a)/t x 2 bytes of
// DESIGN.md §5.3.
int64_t ContextParallelKvBytes(const ShardShapes& shapes);
// The activation (or its gradient) crossing a pipeline-stage boundary: residual_tokens x h
// bf16 values, 2 s b h / (t c) bytes with sequence parallelism.
int64_t PipelineBoundaryBytes(const ShardShapes& shapes);

}  // namespace paratune

#endif  // PARATUNE_WORKER_PROBE_SHARD_SHAPES_H_
