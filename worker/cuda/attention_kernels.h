// The non-GEMM parts of causal grouped-query attention over one rank's tokens: the rotary
// embedding and head layouts, and the softmax with its gradient. attention.h combines them
// with cuBLASLt products into the forward and backward pass.
//
// Layouts (b sequences of n = s/c tokens on this context rank, G kv heads of the rank, H
// query heads per kv head, d head dim, T = b n):
//   qkv     [T, G, H + 2, d]: the QKV projection's output, per kv group its H query heads,
//           then its key and value head (Megatron-LM's grouped layout);
//   query   [b, G, n, H, d]: the queries of a kv group, token-major, so that a chunk of
//           tokens is a contiguous [rows = tokens x H, d] matrix;
//   kv      [2, b, G, n, d]: keys, then values;
//   tokens  [T, G, H, d]: attention output as the output projection reads it;
//   scores  [G, rows, keys] fp32 and probabilities [G, rows, keys] bf16 for one chunk of
//           tokens of one sequence, rows row_stride apart; row r is token first + r / H,
//           head r % H;
//   lse     [b, G, n, H] fp32: each query row's log-sum-exp, kept for the backward pass.
#ifndef PARATUNE_WORKER_CUDA_ATTENTION_KERNELS_H_
#define PARATUNE_WORKER_CUDA_ATTENTION_KERNELS_H_

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

namespace paratune {

// Rotary-embedding base of Llama 3 (rope_theta).
inline constexpr float kRopeBase = 500000.0f;

// Where a rank's tokens sit in the sequence. With context parallelism the sequence is cut
// into 2c chunks of s/(2c) and rank r holds chunks r and 2c - 1 - r, so that causal
// attention costs every rank the same (Megatron-LM/Transformer Engine load balancing).
struct TokenPositions {
  int64_t sequence = 0;          // s
  int64_t context_parallel = 1;  // c
  int64_t context_rank = 0;      // r
};

// Shapes of the attention of one micro-batch on one rank.
struct AttentionDims {
  int64_t sequences = 0;            // b
  int64_t tokens_per_sequence = 0;  // n = s / c
  int64_t kv_heads = 0;             // G
  int64_t heads_per_kv = 0;         // H
  int64_t head_dim = 0;             // d, even
};

// qkv -> query and kv, rotating queries and keys by their positions (RoFormer, Su et al.
// 2021, with Llama's rotate-half pairing of element j with j + d/2).
cudaError_t RopeSplit(const __nv_bfloat16* qkv, __nv_bfloat16* query, __nv_bfloat16* kv,
                      const AttentionDims& dims, const TokenPositions& positions,
                      cudaStream_t stream);

// The gradient of RopeSplit: d_query (bf16, query layout) and d_kv (fp32, kv layout) back to
// d_qkv (qkv layout), rotating by minus the angle.
cudaError_t RopeSplitBackward(const __nv_bfloat16* d_query, const float* d_kv, __nv_bfloat16* d_qkv,
                              const AttentionDims& dims, const TokenPositions& positions,
                              cudaStream_t stream);

// query layout <-> tokens layout (the same permutation serves attention outputs).
cudaError_t HeadsToTokens(const __nv_bfloat16* heads, __nv_bfloat16* tokens,
                          const AttentionDims& dims, cudaStream_t stream);
cudaError_t TokensToHeads(const __nv_bfloat16* tokens, __nv_bfloat16* heads,
                          const AttentionDims& dims, cudaStream_t stream);

// One chunk of query rows against `keys` columns of keys, for each of the G kv heads. Row r
// sees columns 0 .. diagonal + r / H: with columns the keys' positions from 0, diagonal is
// the position of the chunk's first query (causal attention); keys - 1 or more makes every
// column visible (a context-parallel ring block that the chunk sees whole). lse points at
// the chunk's first row of kv head 0; kv head g's rows are lse_group_stride further apart.
struct SoftmaxChunk {
  int64_t kv_heads = 0;      // G
  int64_t heads_per_kv = 0;  // H
  int64_t rows = 0;          // query rows per kv head: chunk tokens x H
  int64_t keys = 0;          // columns of scores and probabilities
  // Elements from one row to the next, >= keys: a multiple of 8, so that every row starts
  // 16-byte aligned for the tensor-core products.
  int64_t row_stride = 0;
  int64_t diagonal = 0;
  int64_t lse_group_stride = 0;
};

// probabilities = softmax of each row's visible scores (0 where masked); writes lse.
cudaError_t CausalSoftmaxForward(const float* scores, __nv_bfloat16* probabilities, float* lse,
                                 const SoftmaxChunk& chunk, cudaStream_t stream);

// probabilities = exp(scores - lse) where visible, 0 elsewhere: the forward's
// probabilities again from its kept lse.
cudaError_t CausalSoftmaxRecompute(const float* scores, const float* lse,
                                   __nv_bfloat16* probabilities, const SoftmaxChunk& chunk,
                                   cudaStream_t stream);

// row_sums[(b, g, i, h)] = sum over d of d_out * out, both in tokens layout, written in lse
// layout: the D of FlashAttention-2's backward pass (Dao 2023).
cudaError_t AttentionRowSums(const __nv_bfloat16* d_out, const __nv_bfloat16* out, float* row_sums,
                             const AttentionDims& dims, cudaStream_t stream);

// In place: probabilities (P) become the score gradients dS = P (dP - D), with dP the fp32
// d_probabilities and D the chunk's row sums (lse layout, offset and strided as lse).
cudaError_t CausalSoftmaxBackward(const float* d_probabilities, const float* row_sums,
                                  __nv_bfloat16* probabilities, const SoftmaxChunk& chunk,
                                  cudaStream_t stream);

// Context parallelism's ring (worker/probe/context_parallel_ring.h): merges into out and
// lse (query and lse layouts), the attention of local tokens [first_token, first_token +
// tokens) of every sequence over the keys seen so far, a partial result over other keys,
// partial (query layout) with its log-sum-exps partial_lse (lse layout): lse' =
// log(exp(lse) + exp(partial_lse)), out' = exp(lse - lse') out + exp(partial_lse - lse')
// partial (Transformer Engine's flash_attn_fwd_softmax_lse_correction and
// flash_attn_fwd_out_correction, context_parallel.py; out stays bf16 between merges, where
// Transformer Engine sums the steps in fp32).
cudaError_t MergeAttentionPartial(const __nv_bfloat16* partial, const float* partial_lse,
                                  __nv_bfloat16* out, float* lse, const AttentionDims& dims,
                                  int64_t first_token, int64_t tokens, cudaStream_t stream);

// sum[i] += part[i]: a ring block's key and value gradients, the rank's part added to those
// received.
cudaError_t AccumulateFloats(const float* part, float* sum, int64_t count, cudaStream_t stream);

// The fused ring backward's per-step gradients, which cuDNN writes (bf16) rather than adds:
// sum += part over local tokens [first_token, first_token + tokens) of every sequence and kv
// head, the rest of sum unchanged. Query layout (dQ, summed in bf16 as the chunked ring's
// products add into it) and kv layout (dK and dV, into the rank's fp32 part of the block's
// gradients).
cudaError_t AccumulateQueryTokens(const __nv_bfloat16* part, __nv_bfloat16* sum,
                                  const AttentionDims& dims, int64_t first_token, int64_t tokens,
                                  cudaStream_t stream);
cudaError_t AccumulateKeyValueTokens(const __nv_bfloat16* part, float* sum,
                                     const AttentionDims& dims, int64_t first_token, int64_t tokens,
                                     cudaStream_t stream);

// Context parallelism with all_gather and cuDNN's fused attention: every context rank's keys
// and values, all-gathered in rank order ([c, kv layout], rank r's local tokens chunk r then
// chunk 2c-1-r of s/(2c) positions), into position order [2, b, G, s, d], so that the keys
// before any position are a prefix (Transformer Engine index-selects its gathered chunks the
// same way, get_seq_chunk_ids_for_reordering_before_attn in context_parallel.py).
cudaError_t GatheredKeyValuesToPositions(const __nv_bfloat16* gathered, __nv_bfloat16* ordered,
                                         const AttentionDims& dims, int64_t context_parallel,
                                         cudaStream_t stream);
// The way back for the fused backward's key and value gradients, which cuDNN writes (bf16) in
// position order: sum (fp32, [c, kv layout] in rank order) += part's positions [0, keys) of
// every sequence and kv head (part [2, b, G, s, d]), the rest of sum unchanged.
cudaError_t AccumulatePositionsToGathered(const __nv_bfloat16* part, float* sum,
                                          const AttentionDims& dims, int64_t context_parallel,
                                          int64_t keys, cudaStream_t stream);

}  // namespace paratune

#endif  // PARATUNE_WORKER_CUDA_ATTENTION_KERNELS_H_
