// Causal grouped-query attention of one micro-batch on one rank, forward and backward, with
// context parallelism. Each pass runs cuDNN's fused flash attention (cudnn_attention.h) where
// SelectKernel finds cuDNN runs its graph for the shape; otherwise attention is computed a
// chunk of queries at a time: the scores of the chunk's queries against every key they can
// see (one cuBLASLt product per position-contiguous block of keys), a masked softmax, and
// the product with the values, so the scores never take more than the plan's attention
// workspace. Unlike FlashAttention the scores pass through device memory (docs/probe.md).
// Either backward works from the forward's natural-log log-sum-exp, whichever kernel wrote
// it. Context parallelism all-gathers K and V over the context group (Llama 3's choice,
// Transformer Engine's cp_comm_type "all_gather"; the same bytes as the ring exchanges of
// DESIGN.md §5.3) and reduce-scatters their gradients.
#ifndef PARATUNE_WORKER_CUDA_ATTENTION_H_
#define PARATUNE_WORKER_CUDA_ATTENTION_H_

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "worker/cuda/attention_kernels.h"
#include "worker/cuda/cudnn_attention.h"
#include "worker/cuda/gemm.h"
#include "worker/cuda/phase_timer.h"
#include "worker/probe/shard_shapes.h"

namespace paratune {

// Device buffers of one layer's attention (layouts in attention_kernels.h).
struct AttentionBuffers {
  // Kept from forward for backward (the layer's activation block).
  __nv_bfloat16* query = nullptr;      // query layout
  __nv_bfloat16* key_value = nullptr;  // kv layout, this rank's tokens
  float* lse = nullptr;                // lse layout
  // Transient (the probe workspace).
  __nv_bfloat16* heads = nullptr;           // query layout: the output, then its gradient
  __nv_bfloat16* query_gradient = nullptr;  // query layout
  // One chunk's scores; cuDNN's workspace for the fused passes, the fused backward's bf16 key
  // and value gradients first (FusedBackwardGradientBytes, attention_graph.h).
  float* scores = nullptr;
  __nv_bfloat16* probabilities = nullptr;       // one chunk's probabilities
  __nv_bfloat16* gathered_key_value = nullptr;  // [c, kv layout]; unused when c = 1
  float* key_value_gradients = nullptr;         // [c, kv layout] fp32
  float* row_sums = nullptr;                    // lse layout
};

// Not thread-safe: one per rank.
class Attention {
 public:
  // `query_chunk` tokens per chunk (FootprintPlan::attention_query_chunk); `context` is the
  // context-parallel communicator (nullptr when c = 1) and `context_rank` this rank's place
  // in it. Work is enqueued on `stream`, phases marked on `timer`.
  Attention(Gemm* gemm, const ShardShapes& shapes, int64_t query_chunk, ncclComm_t context,
            int64_t context_rank, cudaStream_t stream, PhaseTimer* timer);

  // Chooses each pass's kernel, once, before the first Forward: cuDNN's fused attention
  // when cuDNN builds a plan for the pass's graph within `workspace_bytes` (the plans run in
  // buffers.scores; the backward's after its bf16 key and value gradients), else the chunked
  // path, with the reason kept in fallback_reason() or backward_fallback_reason(). Errors
  // only when cuDNN ran out of memory (RESOURCE_EXHAUSTED).
  absl::Status SelectKernel(int64_t workspace_bytes);
  // "cudnn_fused" or "chunked": the forward pass's kernel (ProbeMeasurements.attention_kernel).
  const char* forward_kernel() const { return fused_forward_ ? "cudnn_fused" : "chunked"; }
  // Why the forward pass is chunked; empty when it is fused or SelectKernel was not called.
  const std::string& fallback_reason() const { return fallback_reason_; }
  // The same for the backward pass (ProbeMeasurements.attention_backward_kernel and
  // attention_backward_fallback_reason).
  const char* backward_kernel() const { return fused_backward_ ? "cudnn_fused" : "chunked"; }
  const std::string& backward_fallback_reason() const { return backward_fallback_reason_; }

  // qkv [T, (a/t + 2 kv) d] -> out [T, (a/t) d]; keeps query, key_value and lse.
  absl::Status Forward(const __nv_bfloat16* qkv, __nv_bfloat16* out,
                       const AttentionBuffers& buffers);

  // The gradient of Forward: d_out and Forward's out (tokens layout) -> d_qkv, from the kept
  // buffers.
  absl::Status Backward(const __nv_bfloat16* d_out, const __nv_bfloat16* out, __nv_bfloat16* d_qkv,
                        const AttentionBuffers& buffers);

 private:
  // A chunk of one sequence's query tokens [first_token, first_token + tokens).
  struct Chunk {
    int64_t sequence;
    int64_t first_token;
    int64_t tokens;
  };
  // A block of keys contiguous in position and in memory: columns [first_key, first_key +
  // keys) of the chunk's scores, held at `offset` elements into a [c, kv layout] buffer of
  // keys (values are one kv-layout block further).
  struct KeyBlock {
    int64_t first_key;
    int64_t keys;
    int64_t offset;
  };

  // Calls visit(chunk) for every chunk of every sequence, stopping at the first error.
  template <typename Visit>
  absl::Status ForEachChunk(Visit visit) const;
  // The key blocks the chunk sees, in position order.
  std::vector<KeyBlock> KeyBlocks(const Chunk& chunk) const;
  SoftmaxChunk SoftmaxShape(const Chunk& chunk) const;
  int64_t QueryOffset(const Chunk& chunk) const;  // chunk's first query row, elements
  int64_t LseOffset(const Chunk& chunk) const;

  // The products of a chunk with one key block, batched over the G kv heads (docs in .cc).
  GemmArgs ScoresProduct(const __nv_bfloat16* rows, const __nv_bfloat16* keys, const Chunk& chunk,
                         const KeyBlock& block, float* scores) const;
  GemmArgs RowsByKeys(const __nv_bfloat16* by_key, const __nv_bfloat16* keys, const Chunk& chunk,
                      const KeyBlock& block, __nv_bfloat16* out, bool accumulate) const;
  GemmArgs KeysByRows(const __nv_bfloat16* by_key, const __nv_bfloat16* rows, const Chunk& chunk,
                      const KeyBlock& block, float* out) const;

  // Backward through cuDNN's fused plan (c = 1), up to the query and fp32 kv gradients.
  absl::Status FusedBackward(const __nv_bfloat16* d_out, const __nv_bfloat16* out,
                             const AttentionBuffers& buffers);
  // Backward a chunk at a time, up to the same.
  absl::Status ChunkedBackward(const __nv_bfloat16* d_out, const __nv_bfloat16* out,
                               const AttentionBuffers& buffers);

  // Every context rank's keys and values ([c, kv layout]): `buffers.key_value` itself when
  // c = 1, else all-gathered into buffers.gathered_key_value.
  absl::StatusOr<const __nv_bfloat16*> AllKeyValues(const AttentionBuffers& buffers);

  Gemm* gemm_;
  ShardShapes shapes_;
  AttentionDims dims_;
  TokenPositions positions_;
  int64_t query_chunk_;
  ncclComm_t context_;
  cudaStream_t stream_;
  PhaseTimer* timer_;
  float scale_;
  int64_t kv_block_;  // elements of one kv-layout block of keys (or values)
  std::unique_ptr<CudnnAttention> fused_forward_;  // null: chunked
  std::string fallback_reason_;
  std::unique_ptr<CudnnAttention> fused_backward_;  // null: chunked
  std::string backward_fallback_reason_;
};

}  // namespace paratune

#endif  // PARATUNE_WORKER_CUDA_ATTENTION_H_
