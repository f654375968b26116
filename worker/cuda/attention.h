// Causal grouped-query attention of one micro-batch on one rank, forward and backward, with
// context parallelism. Each pass runs cuDNN's fused flash attention (cudnn_attention.h) where
// SelectKernel finds cuDNN runs its graphs for the shape (with the p2p ring, one graph per
// kind of ring product, as Transformer Engine runs its fused attention per ring step);
// otherwise attention is computed a
// chunk of queries at a time: the scores of the chunk's queries against every key they can
// see (one cuBLASLt product per position-contiguous block of keys), a masked softmax, and
// the product with the values, so the scores never take more than the plan's attention
// workspace. Unlike FlashAttention the scores pass through device memory (docs/probe.md).
// Either backward works from the forward's natural-log log-sum-exp, whichever kernel wrote
// it.
//
// Context parallelism (c > 1, chunked) exchanges keys and values as the training spec's
// cp_comm_type says:
// - p2p (Megatron-LM's default): Transformer Engine's ring (worker/probe/
//   context_parallel_ring.h): each step's block of keys and values is passed on over the
//   context group with ncclSend/ncclRecv on a communication stream of the attention's own,
//   double-buffered, while the compute stream attends to it; the forward merges the steps'
//   partial outputs by their log-sum-exps, the backward passes each block's fp32 key and
//   value gradients around the ring behind it. The compute stream waits for an exchange
//   only when it needs the block: the wait is the `cp_collectives` phase. Fused, each
//   step's products are cuDNN plans over strided views of the layouts; the backward's
//   plans write each step's dQ, dK and dV, which are added into the ring's sums.
// - all_gather (Llama 3's choice, Transformer Engine's AttnFuncWithCPAndKVAllGather): K and V
//   all-gathered over the context group before attention, their gradients reduce-scattered
//   after it, on the compute stream. Fused, as Transformer Engine: the gathered keys and
//   values reordered into position order in the workspace, then one cuDNN plan per query
//   half (attention_graph.h's AllGatherProducts: the half against the positions up to its
//   own, causal aligned bottom-right); the backward's plans write each half's dK and dV in
//   position order into the (then free) gathered buffer, which are added into the fp32
//   rank-ordered gradients that are reduce-scattered.
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
#include "estimator/training_spec.h"
#include "worker/cuda/attention_kernels.h"
#include "worker/cuda/context_ring_transport.h"
#include "worker/cuda/cudnn_attention.h"
#include "worker/cuda/gemm.h"
#include "worker/cuda/phase_timer.h"
#include "worker/probe/context_parallel_ring.h"
#include "worker/probe/shard_shapes.h"

namespace paratune {

// Device buffers of one layer's attention (layouts in attention_kernels.h).
struct AttentionBuffers {
  // Kept from forward for backward (the layer's activation block).
  __nv_bfloat16* query = nullptr;      // query layout
  __nv_bfloat16* key_value = nullptr;  // kv layout, this rank's tokens
  float* lse = nullptr;                // lse layout
  // Transient (the probe workspace).
  // Query layout: the output, then its gradient (the fused ring backward, which reads the
  // gradient in the tokens layout: a step's dQ).
  __nv_bfloat16* heads = nullptr;
  // Query layout: the query gradient; in the ring's forward, a step's partial output.
  __nv_bfloat16* query_gradient = nullptr;
  // One chunk's scores; cuDNN's workspace for the fused passes, the fused backward's bf16 key
  // and value gradients first (FusedBackwardGradientBytes, attention_graph.h), or with
  // all_gather (c > 1) both passes' position-ordered keys and values (AllGatherKeyValueBytes).
  float* scores = nullptr;
  __nv_bfloat16* probabilities = nullptr;  // one chunk's probabilities
  // All-gather: [c, kv layout], in the fused backward then the halves' bf16 key and value
  // gradients in position order [2, b, G, s, d]; ring: [RingKeyValueSlots(c), kv layout], the
  // received blocks; unused when c = 1.
  __nv_bfloat16* gathered_key_value = nullptr;
  // fp32 [c, kv layout] (all-gather; [1, ...] when c = 1) or [kRingGradientSlots, kv
  // layout] (ring).
  float* key_value_gradients = nullptr;
  // Lse layout: the backward's rowsum(dO O); in the ring's forward, a step's partial lse.
  float* row_sums = nullptr;
};

// How the all_gather path's keys and values and their gradients cross the context group
// (NCCL over the context communicator unless a test stands in for the other ranks: one GPU
// cannot hold two NCCL ranks of a communicator).
class GatherTransport {
 public:
  virtual ~GatherTransport() = default;
  // Enqueues on `stream`: every context rank's `count` elements `send` into `receive`
  // [c, count], in rank order.
  virtual absl::Status AllGather(const __nv_bfloat16* send, __nv_bfloat16* receive, int64_t count,
                                 cudaStream_t stream) = 0;
  // Enqueues on `stream`: the sum over context ranks of their [c, count] `send`, this rank's
  // part into `receive` (which may be this rank's part of `send`).
  virtual absl::Status ReduceScatter(const float* send, float* receive, int64_t count,
                                     cudaStream_t stream) = 0;
};

// Not thread-safe: one per rank.
class Attention {
 public:
  // `query_chunk` tokens per chunk (FootprintPlan::attention_query_chunk); `context` is the
  // context-parallel communicator (nullptr when c = 1), `context_rank` this rank's place in
  // it and `exchange` how K and V cross it (ProbeSpec::cp_comm_type). Work is enqueued on
  // `stream`, phases marked on `timer`.
  Attention(Gemm* gemm, const ShardShapes& shapes, int64_t query_chunk, ncclComm_t context,
            int64_t context_rank, CpCommType exchange, cudaStream_t stream, PhaseTimer* timer);
  Attention(const Attention&) = delete;
  Attention& operator=(const Attention&) = delete;
  ~Attention();

  // Replaces the ring's exchanges over `context` (tests: one GPU cannot hold two NCCL ranks
  // of a communicator, so a test stands in for the other ranks). Before the first pass.
  void SetRingTransport(std::unique_ptr<RingTransport> transport) {
    transport_ = std::move(transport);
  }
  // The same for all_gather's collectives.
  void SetGatherTransport(std::unique_ptr<GatherTransport> transport) {
    gather_transport_ = std::move(transport);
  }

  // Chooses each pass's kernel, once, before the first Forward: cuDNN's fused attention
  // when cuDNN builds a plan for every graph of the pass within `workspace_bytes` (the
  // whole causal attention, each kind of product of the p2p ring's steps, or all_gather's
  // two query halves; the plans run in buffers.scores, the backward's after its bf16 key and
  // value gradients, all_gather's after the position-ordered keys and values), else the
  // chunked path for the whole pass, with the reason (the first refused graph's) kept in
  // fallback_reason() or backward_fallback_reason(). Errors only when cuDNN ran out of
  // memory (RESOURCE_EXHAUSTED) or context parallelism has no schedule for the shapes
  // (ContextRingSteps' or AllGatherProducts' INVALID_ARGUMENT).
  absl::Status SelectKernel(int64_t workspace_bytes);
  // "cudnn_fused" or "chunked": the forward pass's kernel (ProbeMeasurements.attention_kernel).
  const char* forward_kernel() const { return fused_forward_.empty() ? "chunked" : "cudnn_fused"; }
  // Why the forward pass is chunked; empty when it is fused or SelectKernel was not called.
  const std::string& fallback_reason() const { return fallback_reason_; }
  // The same for the backward pass (ProbeMeasurements.attention_backward_kernel and
  // attention_backward_fallback_reason).
  const char* backward_kernel() const {
    return fused_backward_.empty() ? "chunked" : "cudnn_fused";
  }
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

  // What a chunk computes against a buffer of keys: its softmax's shape and the key blocks
  // (columns of its scores) it sees, in column order.
  struct ChunkKeys {
    SoftmaxChunk shape;
    std::vector<KeyBlock> blocks;
  };

  // A cuDNN plan of one pass and the product of the rank's attention it computes.
  struct FusedProduct {
    RingProduct product;
    std::unique_ptr<CudnnAttention> plan;
  };
  // The plans of a pass's products (the whole causal attention, the ring's kinds of product
  // or all_gather's halves); an error when cuDNN refuses one, naming the product.
  absl::StatusOr<std::vector<FusedProduct>> FusedPlans(const std::vector<RingProduct>& products,
                                                       bool backward, int64_t workspace_bytes);
  // The plan of `product` in a pass's `plans`; nullptr when the pass is chunked.
  static CudnnAttention* FusedPlan(const std::vector<FusedProduct>& plans,
                                   const RingProduct& product);

  // Calls visit(chunk) for every chunk of local tokens [first, end) of every sequence, never
  // across the halves of a context-parallel rank's tokens, stopping at the first error.
  template <typename Visit>
  absl::Status ForEachChunk(int64_t first, int64_t end, Visit visit) const;
  // The chunk's keys in the [c, kv layout] keys of every rank (c = 1 or all-gathered): every
  // position up to the chunk's last, causal.
  ChunkKeys GatheredKeys(const Chunk& chunk) const;
  // The chunk's keys in one ring block (kv layout) under `product`, whose queries hold the
  // chunk's.
  ChunkKeys RingKeys(const Chunk& chunk, const RingProduct& product) const;
  int64_t QueryOffset(const Chunk& chunk) const;  // chunk's first query row, elements
  int64_t LseOffset(const Chunk& chunk) const;

  // The products of a chunk with one key block, batched over the G kv heads (docs in .cc).
  GemmArgs ScoresProduct(const __nv_bfloat16* rows, const __nv_bfloat16* keys, const Chunk& chunk,
                         const SoftmaxChunk& shape, const KeyBlock& block, float* scores) const;
  GemmArgs RowsByKeys(const __nv_bfloat16* by_key, const __nv_bfloat16* keys, const Chunk& chunk,
                      const SoftmaxChunk& shape, const KeyBlock& block, __nv_bfloat16* out,
                      bool accumulate) const;
  GemmArgs KeysByRows(const __nv_bfloat16* by_key, const __nv_bfloat16* rows, const Chunk& chunk,
                      const SoftmaxChunk& shape, const KeyBlock& block, float* out) const;

  // One chunk's forward against `keys` and `values` (buffers of the layout `chunk_keys`
  // indexes): its output (query layout) into `out` and its log-sum-exps (lse layout) into
  // `lse`.
  absl::Status ForwardChunk(const Chunk& chunk, const ChunkKeys& chunk_keys,
                            const __nv_bfloat16* keys, const __nv_bfloat16* values,
                            __nv_bfloat16* out, float* lse, const AttentionBuffers& buffers);
  // One chunk's backward from buffers.heads (dO, query layout), buffers.row_sums and
  // buffers.lse: adds to the key and value gradients, writes (or with `accumulate_query`
  // adds to) buffers.query_gradient.
  absl::Status BackwardChunk(const Chunk& chunk, const ChunkKeys& chunk_keys,
                             const __nv_bfloat16* keys, const __nv_bfloat16* values,
                             float* key_gradients, float* value_gradients, bool accumulate_query,
                             const AttentionBuffers& buffers);

  // Whether context parallelism runs the ring.
  bool Ring() const;
  // The forward passes of the all-gather (or c = 1) path and of the ring, up to the heads.
  absl::Status GatheredForward(const AttentionBuffers& buffers);
  absl::Status RingForward(const AttentionBuffers& buffers);
  // The backward passes up to the query gradient; each returns this rank's own fp32 key and
  // value gradients (kv layout). Through cuDNN's fused plans (c = 1, or all_gather's
  // halves), a chunk at a time over the gathered keys, and around the ring.
  absl::StatusOr<const float*> FusedBackward(const __nv_bfloat16* d_out, const __nv_bfloat16* out,
                                             const AttentionBuffers& buffers);
  absl::StatusOr<const float*> ChunkedBackward(const __nv_bfloat16* d_out, const __nv_bfloat16* out,
                                               const AttentionBuffers& buffers);
  absl::StatusOr<const float*> RingBackward(const __nv_bfloat16* d_out, const __nv_bfloat16* out,
                                            const AttentionBuffers& buffers);
  // One ring product's fused backward against `keys` (and values kv_block_ further): its dQ
  // written (or with `accumulate_query` added) into buffers.query_gradient, its dK and dV
  // added into the fp32 `gradients` (kv layout).
  absl::Status FusedRingBackward(CudnnAttention* plan, const RingProduct& product,
                                 const __nv_bfloat16* keys, const __nv_bfloat16* d_out,
                                 const __nv_bfloat16* out, float* gradients, bool accumulate_query,
                                 const AttentionBuffers& buffers);

  // Every context rank's keys and values ([c, kv layout]): `buffers.key_value` itself when
  // c = 1, else all-gathered into buffers.gathered_key_value.
  absl::StatusOr<const __nv_bfloat16*> AllKeyValues(const AttentionBuffers& buffers);
  // All_gather's fused passes: every rank's keys and values all-gathered, then reordered into
  // position order at the start of buffers.scores, which it returns (values c kv_block_
  // further).
  absl::StatusOr<const __nv_bfloat16*> PositionOrderedKeyValues(const AttentionBuffers& buffers);
  // This rank's part of the fp32 [c, kv layout] buffers.key_value_gradients: itself when
  // c = 1, else reduce-scattered over the context ranks that saw its keys.
  absl::StatusOr<const float*> OwnKeyValueGradients(const AttentionBuffers& buffers);
  // Bytes at the start of buffers.scores that a fused pass's plans do not get: the
  // backward's bf16 key and value gradients, or all_gather's position-ordered keys and
  // values.
  int64_t FusedReservedBytes(bool backward) const;

  // The ring's machinery. Creates, on first use, the communication stream, its events and
  // (unless a test set one) the NCCL transport; INTERNAL for a CUDA failure.
  absl::Status PrepareRing();
  // The block of keys and values (values kv_block_ further) step `step` reads.
  __nv_bfloat16* RingKeyValues(const AttentionBuffers& buffers, int64_t step) const;
  // Enqueues `exchange` on the communication stream after everything enqueued on the compute
  // stream so far.
  absl::Status RingExchangeAfterCompute(const RingExchange& exchange);
  // Makes the compute stream wait for the last exchange, as `cp_collectives`.
  absl::Status WaitForRingExchange();

  Gemm* gemm_;
  ShardShapes shapes_;
  AttentionDims dims_;
  TokenPositions positions_;
  int64_t query_chunk_;
  ncclComm_t context_;
  CpCommType exchange_;
  cudaStream_t stream_;
  PhaseTimer* timer_;
  float scale_;
  int64_t kv_block_;                         // elements of one kv-layout block of keys (or values)
  std::vector<FusedProduct> fused_forward_;  // empty: chunked
  std::string fallback_reason_;
  std::vector<FusedProduct> fused_backward_;  // empty: chunked
  std::string backward_fallback_reason_;
  // The ring's (null until PrepareRing).
  std::unique_ptr<RingTransport> transport_;
  cudaStream_t ring_stream_ = nullptr;
  cudaEvent_t compute_reached_ = nullptr;              // compute -> communication
  cudaEvent_t exchanged_ = nullptr;                    // communication -> compute
  std::unique_ptr<GatherTransport> gather_transport_;  // null: NCCL over context_
};

}  // namespace paratune

#endif  // PARATUNE_WORKER_CUDA_ATTENTION_H_
