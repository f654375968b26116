#include "worker/cuda/attention.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "worker/cuda/communicators.h"
#include "worker/cuda/cuda_status.h"
#include "worker/cuda/fill_kernels.h"
#include "worker/cuda/ordering_event.h"
#include "worker/probe/attention_graph.h"

namespace paratune {

Attention::Attention(Gemm* gemm, const ShardShapes& shapes, int64_t query_chunk, ncclComm_t context,
                     int64_t context_rank, CpCommType exchange, cudaStream_t stream,
                     PhaseTimer* timer)
    : gemm_(gemm),
      shapes_(shapes),
      query_chunk_(query_chunk),
      context_(context),
      exchange_(exchange),
      stream_(stream),
      timer_(timer),
      scale_(1.0f / std::sqrt(static_cast<float>(shapes.head_dim))) {
  dims_.sequences = shapes.micro_batch;
  dims_.tokens_per_sequence = shapes.sequence_per_rank;
  dims_.kv_heads = shapes.kv_heads;
  dims_.heads_per_kv = shapes.QueryHeadsPerKvHead();
  dims_.head_dim = shapes.head_dim;
  positions_.sequence = shapes.sequence;
  positions_.context_parallel = shapes.context_parallel;
  positions_.context_rank = context_rank;
  kv_block_ = dims_.sequences * dims_.kv_heads * dims_.tokens_per_sequence * dims_.head_dim;
}

Attention::~Attention() {
  if (exchanged_ != nullptr) cudaEventDestroy(exchanged_);
  if (compute_reached_ != nullptr) cudaEventDestroy(compute_reached_);
  if (ring_stream_ != nullptr) cudaStreamDestroy(ring_stream_);
}

namespace {

bool SameProduct(const RingProduct& a, const RingProduct& b) {
  return a.first_query == b.first_query && a.queries == b.queries && a.first_key == b.first_key &&
         a.keys == b.keys && a.mask == b.mask && a.gathered_keys == b.gathered_keys;
}

const char* MaskName(RingMask mask) {
  switch (mask) {
    case RingMask::kCausal:
      return "causal";
    case RingMask::kNone:
      return "unmasked";
    case RingMask::kCausalBottomRight:
      return "bottom-right causal";
  }
  return "unknown mask";
}

}  // namespace

int64_t Attention::FusedReservedBytes(bool backward) const {
  if (shapes_.context_parallel > 1 && !Ring()) return AllGatherKeyValueBytes(shapes_);
  return backward ? FusedBackwardGradientBytes(shapes_) : 0;
}

absl::StatusOr<std::vector<Attention::FusedProduct>> Attention::FusedPlans(
    const std::vector<RingProduct>& products, bool backward, int64_t workspace_bytes) {
  if (backward) PT_RETURN_IF_ERROR(CheckCudnnAttentionBackwardVersion(cudnnGetVersion()));
  const int64_t reserved_bytes = FusedReservedBytes(backward);
  if (reserved_bytes > workspace_bytes) {
    return absl::UnimplementedError(absl::StrCat(
        shapes_.context_parallel > 1 && !Ring()
            ? "the position-ordered all-gathered keys and values need "
            : "the fused backward's bf16 key and value gradients need ",
        reserved_bytes, " bytes, more than the attention workspace's ", workspace_bytes));
  }
  std::vector<FusedProduct> plans;
  for (const RingProduct& product : products) {
    // Without context parallelism, the one causal graph; with it, one graph per product.
    const bool one_graph = shapes_.context_parallel == 1;
    absl::StatusOr<AttentionGraph> graph =
        one_graph ? (backward ? CausalAttentionBackwardGraph(shapes_)
                              : CausalAttentionForwardGraph(shapes_))
                  : (backward ? AttentionBackwardGraph(shapes_, product)
                              : AttentionForwardGraph(shapes_, product));
    absl::StatusOr<std::unique_ptr<CudnnAttention>> plan =
        graph.ok() ? CudnnAttention::Create(*graph, workspace_bytes - reserved_bytes, stream_)
                   : graph.status();
    if (!plan.ok()) {
      if (one_graph) return plan.status();
      return absl::Status(
          plan.status().code(),
          absl::StrCat(Ring() ? "ring" : "all_gather", " product of queries [", product.first_query,
                       ", ", product.first_query + product.queries, ") and keys [",
                       product.first_key, ", ", product.first_key + product.keys, ") ",
                       MaskName(product.mask), ": ", plan.status().message()));
    }
    plans.push_back({product, std::move(plan).value()});
  }
  return plans;
}

CudnnAttention* Attention::FusedPlan(const std::vector<FusedProduct>& plans,
                                     const RingProduct& product) {
  for (const FusedProduct& plan : plans) {
    if (SameProduct(plan.product, product)) return plan.plan.get();
  }
  return nullptr;
}

absl::Status Attention::SelectKernel(int64_t workspace_bytes) {
  // The products both passes compute: the whole causal attention, each kind of product of
  // the ring's steps once, or all_gather's two halves.
  const int64_t n = dims_.tokens_per_sequence;
  std::vector<RingProduct> products = {{0, n, 0, n, RingMask::kCausal}};
  if (shapes_.context_parallel > 1 && !Ring()) {
    PT_ASSIGN_OR_RETURN(products, AllGatherProducts(shapes_, positions_.context_rank));
  } else if (Ring()) {
    PT_ASSIGN_OR_RETURN(const std::vector<RingStep> steps,
                        ContextRingSteps(shapes_.context_parallel, positions_.context_rank, n));
    products.clear();
    for (const RingStep& step : steps) {
      for (const RingProduct& product : step.products) {
        const bool known = std::any_of(products.begin(), products.end(), [&](const RingProduct& p) {
          return SameProduct(p, product);
        });
        if (!known) products.push_back(product);
      }
    }
  }
  using Plans = absl::StatusOr<std::vector<FusedProduct>>;
  Plans forward = FusedPlans(products, false, workspace_bytes);
  Plans backward = FusedPlans(products, true, workspace_bytes);
  // Any graph cuDNN does not build falls back (and is reported), so that a cuDNN version
  // that rejects a graph costs speed, not the probe; running out of memory is a measured
  // result.
  for (const Plans* plans : {&forward, &backward}) {
    if (absl::IsResourceExhausted(plans->status())) return plans->status();
  }
  fallback_reason_ = forward.ok() ? "" : std::string(forward.status().message());
  fused_forward_.clear();
  if (forward.ok()) fused_forward_ = std::move(forward).value();
  backward_fallback_reason_ = backward.ok() ? "" : std::string(backward.status().message());
  fused_backward_.clear();
  if (backward.ok()) fused_backward_ = std::move(backward).value();
  return absl::OkStatus();
}

template <typename Visit>
absl::Status Attention::ForEachChunk(int64_t first, int64_t end, Visit visit) const {
  // With context parallelism the rank's tokens are two position-contiguous halves.
  const int64_t n = dims_.tokens_per_sequence;
  const int64_t segment = shapes_.context_parallel > 1 ? n / 2 : n;
  for (int64_t sequence = 0; sequence < dims_.sequences; ++sequence) {
    for (int64_t start = first; start < end;) {
      const int64_t stop = std::min(end, (start / segment + 1) * segment);
      for (int64_t token = start; token < stop; token += query_chunk_) {
        const Chunk chunk{sequence, token, std::min(query_chunk_, stop - token)};
        PT_RETURN_IF_ERROR(visit(chunk));
      }
      start = stop;
    }
  }
  return absl::OkStatus();
}

Attention::ChunkKeys Attention::GatheredKeys(const Chunk& chunk) const {
  const int64_t c = shapes_.context_parallel;
  const int64_t n = dims_.tokens_per_sequence;
  // PositionOf of attention_kernels.cu, host side: the chunk never crosses a half.
  const int64_t length = shapes_.sequence / (2 * c);
  const int64_t r = positions_.context_rank;
  const int64_t first_position = chunk.first_token < length
                                     ? r * length + chunk.first_token
                                     : (2 * c - 1 - r) * length + (chunk.first_token - length);
  ChunkKeys out;
  SoftmaxChunk& shape = out.shape;
  shape.kv_heads = dims_.kv_heads;
  shape.heads_per_kv = dims_.heads_per_kv;
  shape.rows = chunk.tokens * dims_.heads_per_kv;
  shape.keys = first_position + chunk.tokens;
  shape.row_stride = (shape.keys + 7) / 8 * 8;
  shape.diagonal = first_position;
  shape.lse_group_stride = n * dims_.heads_per_kv;
  const int64_t sequence_keys = chunk.sequence * dims_.kv_heads * n * dims_.head_dim;
  if (c == 1) {
    out.blocks.push_back({0, shape.keys, sequence_keys});
    return out;
  }
  // Position chunk j of length s/(2c) lies on rank j (first half of its tokens) for j < c,
  // on rank 2c - 1 - j (second half) otherwise.
  for (int64_t j = 0; j * length < shape.keys; ++j) {
    const int64_t owner = j < c ? j : 2 * c - 1 - j;
    const int64_t half = j < c ? 0 : 1;
    out.blocks.push_back({j * length, std::min(length, shape.keys - j * length),
                          owner * 2 * kv_block_ + sequence_keys + half * length * dims_.head_dim});
  }
  return out;
}

Attention::ChunkKeys Attention::RingKeys(const Chunk& chunk, const RingProduct& product) const {
  const int64_t n = dims_.tokens_per_sequence;
  ChunkKeys out;
  SoftmaxChunk& shape = out.shape;
  shape.kv_heads = dims_.kv_heads;
  shape.heads_per_kv = dims_.heads_per_kv;
  shape.rows = chunk.tokens * dims_.heads_per_kv;
  shape.lse_group_stride = n * dims_.heads_per_kv;
  // Columns are the product's keys from its first: a causal product (on the diagonal) shows
  // the chunk's queries the keys up to its last query, a full one all of them.
  if (product.mask == RingMask::kCausal) {
    shape.diagonal = chunk.first_token - product.first_key;
    shape.keys = std::min(product.keys, shape.diagonal + chunk.tokens);
  } else {
    shape.keys = product.keys;
    shape.diagonal = shape.keys - 1;
  }
  shape.row_stride = (shape.keys + 7) / 8 * 8;
  // A block's keys of one sequence and kv head are contiguous in local token order.
  out.blocks.push_back(
      {0, shape.keys,
       chunk.sequence * dims_.kv_heads * n * dims_.head_dim + product.first_key * dims_.head_dim});
  return out;
}

int64_t Attention::QueryOffset(const Chunk& chunk) const {
  return LseOffset(chunk) * dims_.head_dim;
}

int64_t Attention::LseOffset(const Chunk& chunk) const {
  return (chunk.sequence * dims_.kv_heads * dims_.tokens_per_sequence + chunk.first_token) *
         dims_.heads_per_kv;
}

// scores[:, block] = scale rows keys^T: rows [chunk rows, d] of the query layout (queries, or
// output gradients for dP), keys [block keys, d] (keys, or values for dP).
GemmArgs Attention::ScoresProduct(const __nv_bfloat16* rows, const __nv_bfloat16* keys,
                                  const Chunk& chunk, const SoftmaxChunk& shape,
                                  const KeyBlock& block, float* scores) const {
  GemmArgs g;
  g.transpose_b = true;
  g.m = shape.rows;
  g.n = block.keys;
  g.k = dims_.head_dim;
  g.a = rows + QueryOffset(chunk);
  g.lda = dims_.head_dim;
  g.b = keys + block.offset;
  g.ldb = dims_.head_dim;
  g.c = scores + block.first_key;
  g.ldc = shape.row_stride;
  g.c_type = GemmOutput::kFloat;
  g.batch = dims_.kv_heads;
  g.stride_a = dims_.tokens_per_sequence * dims_.heads_per_kv * dims_.head_dim;
  g.stride_b = dims_.tokens_per_sequence * dims_.head_dim;
  g.stride_c = shape.rows * shape.row_stride;
  return g;
}

// out [chunk rows, d] (+)= by_key[:, block] keys: by_key the probabilities (or score
// gradients), keys [block keys, d] the values (or keys, for dQ).
GemmArgs Attention::RowsByKeys(const __nv_bfloat16* by_key, const __nv_bfloat16* keys,
                               const Chunk& chunk, const SoftmaxChunk& shape, const KeyBlock& block,
                               __nv_bfloat16* out, bool accumulate) const {
  GemmArgs g;
  g.m = shape.rows;
  g.n = dims_.head_dim;
  g.k = block.keys;
  g.a = by_key + block.first_key;
  g.lda = shape.row_stride;
  g.b = keys + block.offset;
  g.ldb = dims_.head_dim;
  g.c = out + QueryOffset(chunk);
  g.ldc = dims_.head_dim;
  g.beta = accumulate ? 1 : 0;
  g.batch = dims_.kv_heads;
  g.stride_a = shape.rows * shape.row_stride;
  g.stride_b = dims_.tokens_per_sequence * dims_.head_dim;
  g.stride_c = dims_.tokens_per_sequence * dims_.heads_per_kv * dims_.head_dim;
  return g;
}

// out [block keys, d] += by_key[:, block]^T rows: the value gradients from probabilities and
// output gradients, or the key gradients from score gradients and queries; fp32.
GemmArgs Attention::KeysByRows(const __nv_bfloat16* by_key, const __nv_bfloat16* rows,
                               const Chunk& chunk, const SoftmaxChunk& shape, const KeyBlock& block,
                               float* out) const {
  GemmArgs g;
  g.transpose_a = true;
  g.m = block.keys;
  g.n = dims_.head_dim;
  g.k = shape.rows;
  g.a = by_key + block.first_key;
  g.lda = shape.row_stride;
  g.b = rows + QueryOffset(chunk);
  g.ldb = dims_.head_dim;
  g.c = out + block.offset;
  g.ldc = dims_.head_dim;
  g.c_type = GemmOutput::kFloat;
  g.beta = 1;
  g.batch = dims_.kv_heads;
  g.stride_a = shape.rows * shape.row_stride;
  g.stride_b = dims_.tokens_per_sequence * dims_.heads_per_kv * dims_.head_dim;
  g.stride_c = dims_.tokens_per_sequence * dims_.head_dim;
  return g;
}

absl::Status Attention::ForwardChunk(const Chunk& chunk, const ChunkKeys& chunk_keys,
                                     const __nv_bfloat16* keys, const __nv_bfloat16* values,
                                     __nv_bfloat16* out, float* lse, const AttentionBuffers& b) {
  const SoftmaxChunk& shape = chunk_keys.shape;
  for (const KeyBlock& block : chunk_keys.blocks) {
    GemmArgs scores = ScoresProduct(b.query, keys, chunk, shape, block, b.scores);
    scores.alpha = scale_;
    PT_RETURN_IF_ERROR(gemm_->Run(scores, stream_));
  }
  PT_RETURN_IF_ERROR(CudaStatus(
      CausalSoftmaxForward(b.scores, b.probabilities, lse + LseOffset(chunk), shape, stream_),
      "CausalSoftmaxForward"));
  for (size_t i = 0; i < chunk_keys.blocks.size(); ++i) {
    PT_RETURN_IF_ERROR(gemm_->Run(
        RowsByKeys(b.probabilities, values, chunk, shape, chunk_keys.blocks[i], out, i > 0),
        stream_));
  }
  return absl::OkStatus();
}

absl::Status Attention::BackwardChunk(const Chunk& chunk, const ChunkKeys& chunk_keys,
                                      const __nv_bfloat16* keys, const __nv_bfloat16* values,
                                      float* key_gradients, float* value_gradients,
                                      bool accumulate_query, const AttentionBuffers& b) {
  const SoftmaxChunk& shape = chunk_keys.shape;
  const std::vector<KeyBlock>& blocks = chunk_keys.blocks;
  for (const KeyBlock& block : blocks) {
    GemmArgs scores = ScoresProduct(b.query, keys, chunk, shape, block, b.scores);
    scores.alpha = scale_;
    PT_RETURN_IF_ERROR(gemm_->Run(scores, stream_));
  }
  PT_RETURN_IF_ERROR(CudaStatus(
      CausalSoftmaxRecompute(b.scores, b.lse + LseOffset(chunk), b.probabilities, shape, stream_),
      "CausalSoftmaxRecompute"));
  for (const KeyBlock& block : blocks) {
    // dV += P^T dO, then dP = dO V^T into the scores buffer.
    PT_RETURN_IF_ERROR(gemm_->Run(
        KeysByRows(b.probabilities, b.heads, chunk, shape, block, value_gradients), stream_));
    PT_RETURN_IF_ERROR(
        gemm_->Run(ScoresProduct(b.heads, values, chunk, shape, block, b.scores), stream_));
  }
  PT_RETURN_IF_ERROR(CudaStatus(CausalSoftmaxBackward(b.scores, b.row_sums + LseOffset(chunk),
                                                      b.probabilities, shape, stream_),
                                "CausalSoftmaxBackward"));
  for (size_t i = 0; i < blocks.size(); ++i) {
    // dQ = scale dS K, dK += scale dS^T Q.
    GemmArgs d_query = RowsByKeys(b.probabilities, keys, chunk, shape, blocks[i], b.query_gradient,
                                  accumulate_query || i > 0);
    d_query.alpha = scale_;
    PT_RETURN_IF_ERROR(gemm_->Run(d_query, stream_));
    GemmArgs d_keys = KeysByRows(b.probabilities, b.query, chunk, shape, blocks[i], key_gradients);
    d_keys.alpha = scale_;
    PT_RETURN_IF_ERROR(gemm_->Run(d_keys, stream_));
  }
  return absl::OkStatus();
}

absl::StatusOr<const __nv_bfloat16*> Attention::AllKeyValues(const AttentionBuffers& buffers) {
  if (shapes_.context_parallel == 1) return buffers.key_value;
  PT_RETURN_IF_ERROR(timer_->Mark(ProbePhase::kCpCollectives));
  PT_RETURN_IF_ERROR(gather_transport_ != nullptr
                         ? gather_transport_->AllGather(buffers.key_value,
                                                        buffers.gathered_key_value, 2 * kv_block_,
                                                        stream_)
                         : AllGather(context_, buffers.key_value, buffers.gathered_key_value,
                                     2 * kv_block_, ncclBfloat16, stream_));
  PT_RETURN_IF_ERROR(timer_->Mark(ProbePhase::kAttention));
  return buffers.gathered_key_value;
}

absl::StatusOr<const __nv_bfloat16*> Attention::PositionOrderedKeyValues(
    const AttentionBuffers& b) {
  PT_ASSIGN_OR_RETURN(const __nv_bfloat16* gathered, AllKeyValues(b));
  __nv_bfloat16* ordered = reinterpret_cast<__nv_bfloat16*>(b.scores);
  PT_RETURN_IF_ERROR(CudaStatus(
      GatheredKeyValuesToPositions(gathered, ordered, dims_, shapes_.context_parallel, stream_),
      "GatheredKeyValuesToPositions"));
  return ordered;
}

bool Attention::Ring() const {
  return shapes_.context_parallel > 1 && exchange_ == CpCommType::kP2p;
}

absl::Status Attention::Forward(const __nv_bfloat16* qkv, __nv_bfloat16* out,
                                const AttentionBuffers& b) {
  PT_RETURN_IF_ERROR(timer_->Mark(ProbePhase::kAttention));
  PT_RETURN_IF_ERROR(
      CudaStatus(RopeSplit(qkv, b.query, b.key_value, dims_, positions_, stream_), "RopeSplit"));
  PT_RETURN_IF_ERROR(Ring() ? RingForward(b) : GatheredForward(b));
  return CudaStatus(HeadsToTokens(b.heads, out, dims_, stream_), "HeadsToTokens");
}

absl::Status Attention::GatheredForward(const AttentionBuffers& b) {
  const int64_t c = shapes_.context_parallel;
  if (!fused_forward_.empty() && c > 1) {
    // Each half's plan writes its rows of the output and lse.
    PT_ASSIGN_OR_RETURN(const __nv_bfloat16* ordered, PositionOrderedKeyValues(b));
    char* workspace = reinterpret_cast<char*>(b.scores) + FusedReservedBytes(false);
    for (const FusedProduct& fused : fused_forward_) {
      PT_RETURN_IF_ERROR(fused.plan->Forward(b.query, ordered, ordered + c * kv_block_, b.heads,
                                             b.lse, workspace));
    }
    return absl::OkStatus();
  }
  PT_ASSIGN_OR_RETURN(const __nv_bfloat16* keys, AllKeyValues(b));
  const __nv_bfloat16* values = keys + kv_block_;
  if (!fused_forward_.empty()) {
    return fused_forward_.front().plan->Forward(b.query, keys, values, b.heads, b.lse, b.scores);
  }
  return ForEachChunk(0, dims_.tokens_per_sequence, [&](const Chunk& chunk) {
    return ForwardChunk(chunk, GatheredKeys(chunk), keys, values, b.heads, b.lse, b);
  });
}

absl::Status Attention::RingForward(const AttentionBuffers& b) {
  PT_ASSIGN_OR_RETURN(const std::vector<RingStep> steps,
                      ContextRingSteps(shapes_.context_parallel, positions_.context_rank,
                                       dims_.tokens_per_sequence));
  PT_RETURN_IF_ERROR(PrepareRing());
  const int64_t c = shapes_.context_parallel;
  for (int64_t i = 0; i < c; ++i) {
    const __nv_bfloat16* keys = RingKeyValues(b, i);
    if (i > 0) PT_RETURN_IF_ERROR(WaitForRingExchange());
    if (i + 1 < c) {
      RingExchange exchange;
      exchange.send_key_values = keys;
      exchange.receive_key_values = RingKeyValues(b, i + 1);
      exchange.key_value_bytes = 2 * kv_block_ * static_cast<int64_t>(sizeof(__nv_bfloat16));
      PT_RETURN_IF_ERROR(RingExchangeAfterCompute(exchange));
    }
    // Step 0's product covers every query (ContextRingSteps) and writes the output and lse;
    // later steps' partial results are merged into them.
    __nv_bfloat16* out = i == 0 ? b.heads : b.query_gradient;
    float* lse = i == 0 ? b.lse : b.row_sums;
    for (const RingProduct& product : steps[i].products) {
      if (CudnnAttention* plan = FusedPlan(fused_forward_, product)) {
        // The graph writes the product's rows of out and lse.
        PT_RETURN_IF_ERROR(plan->Forward(b.query, keys, keys + kv_block_, out, lse, b.scores));
      } else {
        PT_RETURN_IF_ERROR(ForEachChunk(product.first_query, product.first_query + product.queries,
                                        [&](const Chunk& chunk) {
                                          return ForwardChunk(chunk, RingKeys(chunk, product), keys,
                                                              keys + kv_block_, out, lse, b);
                                        }));
      }
      if (i == 0) continue;
      PT_RETURN_IF_ERROR(
          CudaStatus(MergeAttentionPartial(b.query_gradient, b.row_sums, b.heads, b.lse, dims_,
                                           product.first_query, product.queries, stream_),
                     "MergeAttentionPartial"));
    }
  }
  return absl::OkStatus();
}

absl::Status Attention::Backward(const __nv_bfloat16* d_out, const __nv_bfloat16* out,
                                 __nv_bfloat16* d_qkv, const AttentionBuffers& b) {
  PT_RETURN_IF_ERROR(timer_->Mark(ProbePhase::kAttention));
  absl::StatusOr<const float*> own = Ring()                     ? RingBackward(d_out, out, b)
                                     : !fused_backward_.empty() ? FusedBackward(d_out, out, b)
                                                                : ChunkedBackward(d_out, out, b);
  if (!own.ok()) return own.status();
  return CudaStatus(RopeSplitBackward(b.query_gradient, *own, d_qkv, dims_, positions_, stream_),
                    "RopeSplitBackward");
}

absl::StatusOr<const float*> Attention::FusedBackward(const __nv_bfloat16* d_out,
                                                      const __nv_bfloat16* out,
                                                      const AttentionBuffers& b) {
  const int64_t c = shapes_.context_parallel;
  if (c > 1) {
    // all_gather: each half's plan writes its rows of dQ and its keys' bf16 dK and dV in
    // position order into the gathered buffer (free once reordered), which are added into
    // the rank-ordered fp32 gradients.
    PT_ASSIGN_OR_RETURN(const __nv_bfloat16* ordered, PositionOrderedKeyValues(b));
    PT_RETURN_IF_ERROR(CudaStatus(
        cudaMemsetAsync(b.key_value_gradients, 0, c * 2 * kv_block_ * sizeof(float), stream_),
        "cudaMemsetAsync(key/value gradients)"));
    __nv_bfloat16* d_keys = b.gathered_key_value;
    char* workspace = reinterpret_cast<char*>(b.scores) + FusedReservedBytes(true);
    for (const FusedProduct& fused : fused_backward_) {
      PT_RETURN_IF_ERROR(fused.plan->Backward(b.query, ordered, ordered + c * kv_block_, out, d_out,
                                              b.lse, b.query_gradient, d_keys,
                                              d_keys + c * kv_block_, workspace));
      PT_RETURN_IF_ERROR(
          CudaStatus(AccumulatePositionsToGathered(d_keys, b.key_value_gradients, dims_, c,
                                                   fused.product.keys, stream_),
                     "AccumulatePositionsToGathered(key/value gradients)"));
    }
    return OwnKeyValueGradients(b);
  }
  // cuDNN writes bf16 key and value gradients at the start of the workspace
  // (FusedBackwardGradientBytes); RopeSplitBackward takes them in fp32.
  __nv_bfloat16* d_keys = reinterpret_cast<__nv_bfloat16*>(b.scores);
  __nv_bfloat16* d_values = d_keys + kv_block_;
  char* workspace = reinterpret_cast<char*>(b.scores) + FusedBackwardGradientBytes(shapes_);
  PT_RETURN_IF_ERROR(fused_backward_.front().plan->Backward(
      b.query, b.key_value, b.key_value + kv_block_, out, d_out, b.lse, b.query_gradient, d_keys,
      d_values, workspace));
  PT_RETURN_IF_ERROR(CudaStatus(Bf16ToFloat(d_keys, b.key_value_gradients, 2 * kv_block_, stream_),
                                "Bf16ToFloat(key/value gradients)"));
  return b.key_value_gradients;
}

absl::StatusOr<const float*> Attention::ChunkedBackward(const __nv_bfloat16* d_out,
                                                        const __nv_bfloat16* out,
                                                        const AttentionBuffers& b) {
  PT_RETURN_IF_ERROR(CudaStatus(TokensToHeads(d_out, b.heads, dims_, stream_), "TokensToHeads"));
  PT_RETURN_IF_ERROR(
      CudaStatus(AttentionRowSums(d_out, out, b.row_sums, dims_, stream_), "AttentionRowSums"));
  const int64_t c = shapes_.context_parallel;
  PT_RETURN_IF_ERROR(CudaStatus(
      cudaMemsetAsync(b.key_value_gradients, 0, c * 2 * kv_block_ * sizeof(float), stream_),
      "cudaMemsetAsync(key/value gradients)"));
  PT_ASSIGN_OR_RETURN(const __nv_bfloat16* keys, AllKeyValues(b));
  PT_RETURN_IF_ERROR(ForEachChunk(0, dims_.tokens_per_sequence, [&](const Chunk& chunk) {
    return BackwardChunk(chunk, GatheredKeys(chunk), keys, keys + kv_block_, b.key_value_gradients,
                         b.key_value_gradients + kv_block_, false, b);
  }));
  return OwnKeyValueGradients(b);
}

absl::StatusOr<const float*> Attention::OwnKeyValueGradients(const AttentionBuffers& b) {
  // With context parallelism, each rank's keys and values' gradients are reduce-scattered
  // over the ranks that saw them.
  const int64_t c = shapes_.context_parallel;
  float* own = b.key_value_gradients + positions_.context_rank * 2 * kv_block_;
  if (c == 1) return own;
  PT_RETURN_IF_ERROR(timer_->Mark(ProbePhase::kCpCollectives));
  PT_RETURN_IF_ERROR(
      gather_transport_ != nullptr
          ? gather_transport_->ReduceScatter(b.key_value_gradients, own, 2 * kv_block_, stream_)
          : ReduceScatter(context_, b.key_value_gradients, own, 2 * kv_block_, ncclFloat32,
                          stream_));
  PT_RETURN_IF_ERROR(timer_->Mark(ProbePhase::kAttention));
  return own;
}

absl::StatusOr<const float*> Attention::RingBackward(const __nv_bfloat16* d_out,
                                                     const __nv_bfloat16* out,
                                                     const AttentionBuffers& b) {
  PT_ASSIGN_OR_RETURN(const std::vector<RingStep> steps,
                      ContextRingSteps(shapes_.context_parallel, positions_.context_rank,
                                       dims_.tokens_per_sequence));
  PT_RETURN_IF_ERROR(PrepareRing());
  // The chunked products read dO in the query layout and D = rowsum(dO O); cuDNN's read dO
  // in the tokens layout and compute D themselves.
  if (fused_backward_.empty()) {
    PT_RETURN_IF_ERROR(CudaStatus(TokensToHeads(d_out, b.heads, dims_, stream_), "TokensToHeads"));
    PT_RETURN_IF_ERROR(
        CudaStatus(AttentionRowSums(d_out, out, b.row_sums, dims_, stream_), "AttentionRowSums"));
  }
  const int64_t c = shapes_.context_parallel;
  const int64_t gradient_values = 2 * kv_block_;
  auto slot = [&](int64_t index) { return b.key_value_gradients + index * gradient_values; };
  for (int64_t i = 0; i < c; ++i) {
    const __nv_bfloat16* keys = RingKeyValues(b, i);
    if (i > 0) PT_RETURN_IF_ERROR(WaitForRingExchange());
    // The next block in; this block's predecessor's gradients out, and this block's (summed
    // by the ranks that held it before) in.
    RingExchange exchange;
    if (i + 1 < c) {
      exchange.send_key_values = keys;
      exchange.receive_key_values = RingKeyValues(b, i + 1);
      exchange.key_value_bytes = gradient_values * static_cast<int64_t>(sizeof(__nv_bfloat16));
    }
    if (i > 0) {
      exchange.send_gradients = slot(GradientSlot(i - 1));
      exchange.receive_gradients = slot(GradientSlot(i));
      exchange.gradient_bytes = gradient_values * static_cast<int64_t>(sizeof(float));
    }
    PT_RETURN_IF_ERROR(RingExchangeAfterCompute(exchange));
    // The rank's part: at step 0 straight into the slot step 1 sends; later apart, while the
    // other ranks' sum arrives, and added to it after.
    float* gradients = slot(i == 0 ? GradientSlot(0) : kLocalGradientSlot);
    PT_RETURN_IF_ERROR(
        CudaStatus(cudaMemsetAsync(gradients, 0, gradient_values * sizeof(float), stream_),
                   "cudaMemsetAsync(key/value gradients)"));
    for (const RingProduct& product : steps[i].products) {
      // Step 0's product covers every query (ContextRingSteps) and writes dQ.
      if (CudnnAttention* plan = FusedPlan(fused_backward_, product)) {
        PT_RETURN_IF_ERROR(FusedRingBackward(plan, product, keys, d_out, out, gradients, i > 0, b));
        continue;
      }
      PT_RETURN_IF_ERROR(ForEachChunk(
          product.first_query, product.first_query + product.queries, [&](const Chunk& chunk) {
            return BackwardChunk(chunk, RingKeys(chunk, product), keys, keys + kv_block_, gradients,
                                 gradients + kv_block_, i > 0, b);
          }));
    }
    if (i == 0) continue;
    PT_RETURN_IF_ERROR(WaitForRingExchange());
    PT_RETURN_IF_ERROR(
        CudaStatus(AccumulateFloats(gradients, slot(GradientSlot(i)), gradient_values, stream_),
                   "AccumulateFloats(key/value gradients)"));
  }
  // The last block's gradients go on to their owner; this rank's own come in.
  RingExchange last;
  last.send_gradients = slot(GradientSlot(c - 1));
  last.receive_gradients = slot(GradientSlot(c));
  last.gradient_bytes = gradient_values * static_cast<int64_t>(sizeof(float));
  PT_RETURN_IF_ERROR(RingExchangeAfterCompute(last));
  PT_RETURN_IF_ERROR(WaitForRingExchange());
  return slot(GradientSlot(c));
}

absl::Status Attention::FusedRingBackward(CudnnAttention* plan, const RingProduct& product,
                                          const __nv_bfloat16* keys, const __nv_bfloat16* d_out,
                                          const __nv_bfloat16* out, float* gradients,
                                          bool accumulate_query, const AttentionBuffers& b) {
  // cuDNN writes the product's bf16 dK and dV at the start of the workspace
  // (FusedBackwardGradientBytes) and its dQ, where it is added rather than written, into
  // buffers.heads (free: the fused backward reads dO in the tokens layout); each only at the
  // product's tokens, which are the ones added.
  __nv_bfloat16* d_keys = reinterpret_cast<__nv_bfloat16*>(b.scores);
  char* workspace = reinterpret_cast<char*>(b.scores) + FusedBackwardGradientBytes(shapes_);
  __nv_bfloat16* d_query = accumulate_query ? b.heads : b.query_gradient;
  PT_RETURN_IF_ERROR(plan->Backward(b.query, keys, keys + kv_block_, out, d_out, b.lse, d_query,
                                    d_keys, d_keys + kv_block_, workspace));
  if (accumulate_query) {
    PT_RETURN_IF_ERROR(
        CudaStatus(AccumulateQueryTokens(b.heads, b.query_gradient, dims_, product.first_query,
                                         product.queries, stream_),
                   "AccumulateQueryTokens(query gradients)"));
  }
  return CudaStatus(
      AccumulateKeyValueTokens(d_keys, gradients, dims_, product.first_key, product.keys, stream_),
      "AccumulateKeyValueTokens(key/value gradients)");
}

absl::Status Attention::PrepareRing() {
  if (ring_stream_ == nullptr) {
    PT_RETURN_IF_ERROR(CudaStatus(cudaStreamCreateWithFlags(&ring_stream_, cudaStreamNonBlocking),
                                  "cudaStreamCreateWithFlags(context-parallel ring)"));
  }
  for (cudaEvent_t* event : {&compute_reached_, &exchanged_}) {
    if (*event != nullptr) continue;
    PT_RETURN_IF_ERROR(NewOrderingEvent("context-parallel ring", event));
  }
  if (transport_ == nullptr) {
    transport_ = std::make_unique<NcclRingTransport>(context_, shapes_.context_parallel,
                                                     positions_.context_rank);
  }
  return absl::OkStatus();
}

__nv_bfloat16* Attention::RingKeyValues(const AttentionBuffers& b, int64_t step) const {
  const int64_t slot = KeyValueSlot(step);
  return slot == kOwnBlock ? b.key_value : b.gathered_key_value + slot * 2 * kv_block_;
}

absl::Status Attention::RingExchangeAfterCompute(const RingExchange& exchange) {
  PT_RETURN_IF_ERROR(
      CudaStatus(cudaEventRecord(compute_reached_, stream_), "cudaEventRecord(ring compute)"));
  PT_RETURN_IF_ERROR(CudaStatus(cudaStreamWaitEvent(ring_stream_, compute_reached_, 0),
                                "cudaStreamWaitEvent(ring compute)"));
  PT_RETURN_IF_ERROR(transport_->Exchange(exchange, ring_stream_));
  return CudaStatus(cudaEventRecord(exchanged_, ring_stream_), "cudaEventRecord(ring exchange)");
}

absl::Status Attention::WaitForRingExchange() {
  PT_RETURN_IF_ERROR(timer_->Mark(ProbePhase::kCpCollectives));
  PT_RETURN_IF_ERROR(CudaStatus(cudaStreamWaitEvent(stream_, exchanged_, 0),
                                "cudaStreamWaitEvent(ring exchange)"));
  return timer_->Mark(ProbePhase::kAttention);
}

}  // namespace paratune
