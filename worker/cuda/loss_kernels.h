// The vocabulary-parallel ends of the model (Megatron-LM's VocabParallelEmbedding and
// vocab_parallel_cross_entropy): each tensor-parallel rank holds vocabulary rows
// [vocab_start, vocab_start + vocab); the caller combines the ranks' partial results with
// the all-reduces and reduce-scatters between these kernels.
#ifndef PARATUNE_WORKER_CUDA_LOSS_KERNELS_H_
#define PARATUNE_WORKER_CUDA_LOSS_KERNELS_H_

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

namespace paratune {

struct VocabularyShard {
  int64_t start = 0;  // first token id of the shard
  int64_t size = 0;   // rows of the shard
};

// out[t, :] = table[token - start, :] for tokens in the shard, 0 for the others.
cudaError_t EmbeddingForward(const int32_t* tokens, const __nv_bfloat16* table, __nv_bfloat16* out,
                             int64_t count, int64_t hidden, const VocabularyShard& shard,
                             cudaStream_t stream);

// table_gradient[token - start, :] += d_out[t, :] for tokens in the shard (fp32 gradients,
// or bf16 when fp32_gradient is false).
cudaError_t EmbeddingBackward(const int32_t* tokens, const __nv_bfloat16* d_out,
                              void* table_gradient, bool fp32_gradient, int64_t count,
                              int64_t hidden, const VocabularyShard& shard, cudaStream_t stream);

// row_max[t] = max over the shard's logits of row t (logits [count, shard.size] fp32).
cudaError_t LogitsRowMax(const float* logits, float* row_max, int64_t count,
                         const VocabularyShard& shard, cudaStream_t stream);

// row_sum[t] = sum over the shard of exp(logits - row_max), row_max the all-reduced maximum.
cudaError_t LogitsRowSumExp(const float* logits, const float* row_max, float* row_sum,
                            int64_t count, const VocabularyShard& shard, cudaStream_t stream);

// The cross-entropy's gradient with respect to the logits, (softmax - one_hot(label)) x
// scale, into d_logits (bf16, the LM head's backward input), with row_max and row_sum
// all-reduced over the shards; loss[t] = log(row_sum) + row_max - logit[label] on the shard
// holding the label, 0 on the others (all-reduce with a sum for the loss).
cudaError_t CrossEntropyBackward(const float* logits, const float* row_max, const float* row_sum,
                                 const int32_t* labels, __nv_bfloat16* d_logits, float* loss,
                                 float scale, int64_t count, const VocabularyShard& shard,
                                 cudaStream_t stream);

}  // namespace paratune

#endif  // PARATUNE_WORKER_CUDA_LOSS_KERNELS_H_
