// The ring schedule of context-parallel attention with point-to-point exchanges
// (cp_comm_type p2p, Megatron-LM's default), as Transformer Engine runs it
// (transformer_engine/pytorch/attention/dot_product_attention/context_parallel.py,
// AttnFuncWithCPAndKVP2P): c steps; at step i a rank computes the attention of its queries
// against the K/V block it holds while it passes that block to the next rank and receives the
// next one from the previous rank, double-buffered. With load-balanced causal attention
// (rank r holds sequence chunks r and 2c-1-r of s/(2c) tokens, attention_kernels.h's
// TokenPositions) every step is one product that is either causal or fully visible:
//
// - step 0, the rank's own block: causal over the rank's tokens (TE: the diagonal tile);
// - a block from a lower rank (step i <= r): every query sees the block's first half;
// - a block from a higher rank (step i > r): the second half of the queries sees all of it.
//
// The forward merges the steps' partial outputs with their log-sum-exps (out = sum_j
// exp(lse_j - lse) out_j, lse = logsumexp_j lse_j). The backward runs the ring again from
// the global output and log-sum-exp; a block's dK/dV accumulate as they follow the block
// around the ring one step behind it (TE sends them with the next block), so that rank r
// adds its part of block source(i)'s gradients at step i and passes the sum on at step
// i + 1. Unlike TE, whose backward starts from the forward's last received block (kept with
// the activations) and ends at the rank's own, the probe's starts from the rank's own block,
// which it keeps: one more exchange, after the last step, brings each rank its own block's
// gradients from the previous rank.
//
// Pure host logic; worker/cuda/attention.h runs it.
#ifndef PARATUNE_WORKER_PROBE_CONTEXT_PARALLEL_RING_H_
#define PARATUNE_WORKER_PROBE_CONTEXT_PARALLEL_RING_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

namespace paratune {

// Which pairs of a product's queries and keys are computed.
enum class RingMask {
  // Query t sees key k iff k <= t (local token indices; the product is on the diagonal:
  // first_query == first_key, so every query sees at least its own key).
  kCausal,
  // Every query sees every key of the product.
  kNone,
  // Causal aligned bottom-right: the product's query i sees its key j iff i + keys - queries
  // >= j, so its last query sees every key (cuDNN's causal_mask_bottom_right, Transformer
  // Engine's "causal_bottom_right"). The all-gather path's products (attention_graph.h's
  // AllGatherProducts): a query half's keys are every position up to its last query.
  kCausalBottomRight,
};

// One product of a ring step, in local token indices of one sequence (0 .. n-1 with n = s/c:
// the rank's chunk r, then its chunk 2c-1-r; a block's keys in the same order for its
// owner): the rank's queries [first_query, first_query + queries) against the held block's
// keys [first_key, first_key + keys).
struct RingProduct {
  int64_t first_query = 0;
  int64_t queries = 0;
  int64_t first_key = 0;
  int64_t keys = 0;
  RingMask mask = RingMask::kNone;
  // The keys are positions of the whole sequence (0 .. s-1), in a buffer of every context
  // rank's keys reordered into position order (the all-gather path); otherwise local indices
  // of one rank's block as above.
  bool gathered_keys = false;
};

// One step of a rank's ring.
struct RingStep {
  // The context rank whose keys and values the rank holds at this step.
  int64_t source_rank = 0;
  // What the rank computes against them (one product under load-balanced causal attention).
  std::vector<RingProduct> products;
};

// The c steps of rank `rank` of `context_parallel` ranks holding `tokens` tokens (n = s/c)
// of each sequence; the same steps serve the backward. At step i the rank holds rank
// (rank - i) mod c's block: its own at step 0, then each received from RingPrevious, which
// held it the step before. INVALID_ARGUMENT naming the value unless context_parallel >= 2,
// 0 <= rank < context_parallel and tokens is even and positive.
absl::StatusOr<std::vector<RingStep>> ContextRingSteps(int64_t context_parallel, int64_t rank,
                                                       int64_t tokens);

// The rank a rank sends blocks (and their gradients) to, and the one it receives them from.
inline int64_t RingNext(int64_t context_parallel, int64_t rank) {
  return (rank + 1) % context_parallel;
}
inline int64_t RingPrevious(int64_t context_parallel, int64_t rank) {
  return (rank + context_parallel - 1) % context_parallel;
}

// Buffers of the ring (ProbeBuffer::kKeyValueGathered and kKeyValueGradients), in blocks of
// one rank's keys and values [2, b, G, s/c, d].
//
// Received keys and values: step i >= 1 reads slot KeyValueSlot(i) while step i's exchange
// receives step i + 1's block into KeyValueSlot(i + 1); step 0 reads the rank's own block
// (kOwnBlock). min(2, c - 1) slots.
inline constexpr int64_t kOwnBlock = -1;
inline int64_t KeyValueSlot(int64_t step) { return step == 0 ? kOwnBlock : (step - 1) % 2; }
inline int64_t RingKeyValueSlots(int64_t context_parallel) { return context_parallel > 2 ? 2 : 1; }
// fp32 gradients: step i's block's accumulated dK/dV are in slot GradientSlot(i) (computed
// there at step 0, received there at step i >= 1 while the rank computes its part in slot
// kLocalGradientSlot, added at the end of the step), sent during step i + 1 from that slot
// while GradientSlot(i + 1) receives; GradientSlot(c) receives the rank's own block's after
// the last step. Three slots: two exchanged, one local.
inline int64_t GradientSlot(int64_t step) { return step % 2; }
inline constexpr int64_t kLocalGradientSlot = 2;
inline constexpr int64_t kRingGradientSlots = 3;

}  // namespace paratune

#endif  // PARATUNE_WORKER_PROBE_CONTEXT_PARALLEL_RING_H_
