// The kernels of a mixture-of-experts block beside its GEMMs, as Megatron-Core core_v0.19.0
// runs the block with the all-to-all dispatcher (megatron/core/transformer/moe/): the router's
// score function and top-k (router.py, moe_utils.py topk_routing_with_score_function) and its
// backward, the permutation of token copies by expert before the dispatch and the sum of the
// copies after the combine (moe_utils.py permute, unpermute), the sort of received chunks by
// local expert (sort_chunks_by_idxs), and the SwiGLU weighted by each copy's routing
// probability (experts.py TEGroupedMLP, weighted_bias_swiglu_impl).
//
// Routing is the probe's balanced routing (worker/probe/moe_shard_shapes.h): the top-k is
// computed as Megatron computes it, and copy c = r k + j of row r goes to expert c mod E
// whatever the scores, as --moe-router-force-load-balancing routes on random scores instead of
// the learned ones. So with R k copies and E | R k, expert e receives copies e, e + E, ...,
// R k / E of them, into its `capacity` slots: the permuted position of copy c is
// (c mod E) capacity + c / E, sorted by expert, in row order within each expert, as permute's
// routing_map.T.nonzero() orders them. Dropless, capacity is R k / E; with a capacity factor
// and the input padded to capacity (--moe-expert-capacity-factor with
// --moe-pad-expert-input-to-capacity, moe_utils.py apply_router_token_dropping) it is the
// expert capacity C: copies past C are dropped (their rows get nothing back from them: the
// last by row order, where Megatron's drop policy "probs" drops the lowest-scored), and slots
// past R k / E are padding, zero rows of probability 0 (Megatron pads with rows of probability
// 0 too; their values do not matter to the cost).
#ifndef PARATUNE_WORKER_CUDA_MOE_KERNELS_H_
#define PARATUNE_WORKER_CUDA_MOE_KERNELS_H_

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

namespace paratune {

// How the router turns logits into the probabilities of the top-k experts
// (--moe-router-score-function): a softmax over the k largest logits (Megatron-LM's default
// softmax after the top-k, the same probabilities as a softmax over all E renormalized over
// the top k: Mixtral, Qwen3-MoE), or the sigmoid of each top-k logit, normalized over the k
// when k > 1 (Llama 4).
enum class RouterScoreFunction { kSoftmax, kSigmoid };

// logits: [rows, experts] bf16 (the router GEMM's output, scored in fp32 as with
// --moe-router-dtype fp32); probabilities: [rows, top_k] fp32 and indices [rows, top_k] int32
// of the top-k experts in descending order of logit (ties to the lower index). One thread
// per row: top_k <= 8 and experts <= 1024.
cudaError_t RouterTopK(const __nv_bfloat16* logits, float* probabilities, int32_t* indices,
                       int64_t rows, int64_t experts, int64_t top_k, RouterScoreFunction score,
                       cudaStream_t stream);
// d_logits: [rows, experts] bf16, the gradient of RouterTopK's logits given the gradient of
// its probabilities d_probabilities [rows, top_k] fp32 (0 outside the top k).
cudaError_t RouterTopKBackward(const __nv_bfloat16* logits, const float* probabilities,
                               const int32_t* indices, const float* d_probabilities,
                               __nv_bfloat16* d_logits, int64_t rows, int64_t experts,
                               int64_t top_k, RouterScoreFunction score, cudaStream_t stream);

// tokens: [rows, hidden] bf16 into permuted [experts capacity, hidden], and the copies'
// probabilities [rows, top_k] fp32 into permuted_probabilities [experts capacity], each copy at
// its balanced position, the padding slots zero; without probabilities (both null) the tokens
// alone, as the backward of UnpermuteBalanced copies each row's gradient to its copies.
// Requires experts to divide rows x top_k, and capacity >= 1 (cudaErrorInvalidValue).
cudaError_t PermuteBalanced(const __nv_bfloat16* tokens, const float* probabilities,
                            __nv_bfloat16* permuted, float* permuted_probabilities, int64_t rows,
                            int64_t hidden, int64_t top_k, int64_t experts, int64_t capacity,
                            cudaStream_t stream);
// out [rows, hidden] bf16: each row the sum (in fp32) of its copies in permuted
// [experts capacity, hidden] that the capacity kept; PermuteBalanced's inverse for the combine
// (the experts' outputs are already weighted) and its backward for the tokens' gradient.
cudaError_t UnpermuteBalanced(const __nv_bfloat16* permuted, __nv_bfloat16* out, int64_t rows,
                              int64_t hidden, int64_t top_k, int64_t experts, int64_t capacity,
                              cudaStream_t stream);
// The gradient of PermuteBalanced's probabilities: d_probabilities [rows, top_k] from
// d_permuted_probabilities [experts capacity], each kept copy's from its balanced position, 0
// for a dropped copy.
cudaError_t UnpermuteProbabilities(const float* d_permuted_probabilities, float* d_probabilities,
                                   int64_t rows, int64_t top_k, int64_t experts, int64_t capacity,
                                   cudaStream_t stream);

// Chunks of chunk_rows rows of `width` values reordered from [groups][local_experts] to
// [local_experts][groups]: the tokens received from each source rank of the dispatch (and,
// with etp > 1, gathered from each expert tensor rank), grouped by the local expert they are
// for, so that each expert's GEMM reads one contiguous block (dispatch_postprocess); with
// groups and local_experts swapped, back before the combine (combine_preprocess).
cudaError_t SortChunksBf16(const __nv_bfloat16* in, __nv_bfloat16* out, int64_t groups,
                           int64_t local_experts, int64_t chunk_rows, int64_t width,
                           cudaStream_t stream);
cudaError_t SortChunksFloat(const float* in, float* out, int64_t groups, int64_t local_experts,
                            int64_t chunk_rows, int64_t width, cudaStream_t stream);

// gate_up: [rows, 2 width] (gate, then up); out: [rows, width] = silu(gate) up p, p the row's
// routing probability probabilities[row] (fp32).
cudaError_t WeightedSwigluForward(const __nv_bfloat16* gate_up, const float* probabilities,
                                  __nv_bfloat16* out, int64_t rows, int64_t width,
                                  cudaStream_t stream);
// Its backward from d_out [rows, width]: d_gate_up [rows, 2 width] bf16 and
// d_probabilities [rows] fp32 = sum over the row of d_out silu(gate) up. One block per row.
cudaError_t WeightedSwigluBackward(const __nv_bfloat16* gate_up, const float* probabilities,
                                   const __nv_bfloat16* d_out, __nv_bfloat16* d_gate_up,
                                   float* d_probabilities, int64_t rows, int64_t width,
                                   cudaStream_t stream);

}  // namespace paratune

#endif  // PARATUNE_WORKER_CUDA_MOE_KERNELS_H_
