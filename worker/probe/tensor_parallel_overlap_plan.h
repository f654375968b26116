// How one transformer layer's tensor-parallel collectives overlap its GEMMs under
// Megatron-LM's --tp-comm-overlap (sequence parallelism, tp > 1), which hands them to
// Transformer Engine's userbuffers comm+GEMM overlap with the default method of each GEMM when
// no --tp-comm-overlap-cfg is given (transformer_engine/pytorch/module/base.py,
// initialize_ub's `methods`):
//
// - ring exchange (qkv_fprop, fc1_fprop, proj_dgrad, fc2_dgrad): the all-gather of the
//   rank's rows before a GEMM runs as tp - 1 point-to-point steps; at step i each rank
//   multiplies the chunk of rows it holds while it passes that chunk to the next rank and
//   receives the next one from the previous rank (transformer_engine/common/comm_gemm_overlap/
//   comm_gemm_overlap.cpp, CommOverlapP2PBase::split_overlap_ag: rank r computes chunk
//   (r - i) mod tp, sends it to r + 1, receives chunk (r - i - 1) mod tp from r - 1). Each
//   GEMM's output rows land at their chunk's place of the [T, outputs] result.
// - pipeline (proj_fprop, fc2_fprop): the GEMM before a reduce-scatter runs in `splits`
//   chunks (num_splits, 4 by default), each chunk's reduce-scatter issued as soon as its
//   product is done (CommOverlapBase::split_overlap_rs, which splits the output's columns).
// - bulk (qkv_dgrad, qkv_wgrad, fc1_dgrad, fc1_wgrad): a column-parallel linear's backward
//   re-gathers its input for the weight gradient while the input-gradient GEMM runs, then
//   reduce-scatters the input gradient while the weight-gradient GEMM runs
//   (CommOverlapBase::bulk_overlap), each collective whole.
//
// A pure plan: worker/cuda/tensor_parallel_overlap.h runs it with NCCL on a communication
// stream. docs/probe.md says what differs from userbuffers.
#ifndef PARATUNE_WORKER_PROBE_TENSOR_PARALLEL_OVERLAP_PLAN_H_
#define PARATUNE_WORKER_PROBE_TENSOR_PARALLEL_OVERLAP_PLAN_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

namespace paratune {

enum class TpOverlapMethod { kRingExchange, kPipeline, kBulk };

enum class TpCollective { kAllGather, kReduceScatter };

// The layer's overlapped collectives, each named after the GEMM that hides it (Transformer
// Engine's userbuffer names), in the order one layer's forward and backward run them.
enum class TpOverlapSite {
  kQkvForward,               // qkv_fprop: gather the attention norm's rows, QKV GEMM
  kProjectionForward,        // proj_fprop: attention output GEMM, reduce-scatter
  kGateUpForward,            // fc1_fprop: gather the MLP norm's rows, gate/up GEMM
  kDownForward,              // fc2_fprop: down GEMM, reduce-scatter
  kDownInputGradient,        // fc2_dgrad: gather the output gradient, down input gradient
  kGateUpInputGradient,      // fc1_dgrad: gate/up input gradient, re-gather its input
  kGateUpWeightGradient,     // fc1_wgrad: gate/up weight gradient, reduce-scatter d_input
  kProjectionInputGradient,  // proj_dgrad: gather the output gradient, projection d_input
  kQkvInputGradient,         // qkv_dgrad: QKV input gradient, re-gather its input
  kQkvWeightGradient,        // qkv_wgrad: QKV weight gradient, reduce-scatter d_input
};

struct TpOverlapStep {
  TpOverlapSite site = TpOverlapSite::kQkvForward;
  TpCollective collective = TpCollective::kAllGather;
  TpOverlapMethod method = TpOverlapMethod::kRingExchange;
  // GEMM chunks: tp for a ring exchange, the splits for a pipeline, 1 for bulk.
  int64_t chunks = 1;
};

// One step of a ring exchange on one rank: the chunk (the index of the rank whose rows) it
// multiplies, and the exchange posted beside that product. `send_chunk` and `receive_chunk`
// are -1 on the last step, which exchanges nothing.
struct RingExchangeStep {
  int64_t compute_chunk = 0;
  int64_t send_chunk = -1;
  int64_t send_to = 0;  // rank in the tensor group
  int64_t receive_chunk = -1;
  int64_t receive_from = 0;
};

// A column range [first, first + count) of a pipelined GEMM's output.
struct ColumnChunk {
  int64_t first = 0;
  int64_t count = 0;
};

struct TensorParallelOverlapPlan {
  int64_t tensor_parallel = 2;
  // The pipelined reduce-scatters' chunks.
  int64_t pipeline_splits = 4;
  // Every overlapped collective of a layer, in TpOverlapSite order.
  std::vector<TpOverlapStep> steps;

  const TpOverlapStep& step(TpOverlapSite site) const { return steps[static_cast<size_t>(site)]; }
};

// Transformer Engine's default split of a pipelined GEMM (num_splits).
inline constexpr int64_t kDefaultPipelineSplits = 4;

// The plan of a layer with `tensor_parallel` ranks and `hidden` columns in the pipelined
// GEMMs' outputs (the model's hidden size). The splits are the largest of 4, 2 and 1 that
// keeps every column chunk a multiple of 8 elements (16 bytes of bf16, cuBLASLt's alignment
// for the chunk's output); 1 when none does. INVALID_ARGUMENT naming the field for
// tensor_parallel < 2 (nothing to overlap) or hidden < 1.
absl::StatusOr<TensorParallelOverlapPlan> TensorParallelOverlapPlanOf(int64_t tensor_parallel,
                                                                      int64_t hidden);

// The tp steps of a ring exchange on `rank` of `tensor_parallel` (split_overlap_ag's order).
// Requires 0 <= rank < tensor_parallel.
std::vector<RingExchangeStep> RingExchangeOrder(int64_t tensor_parallel, int64_t rank);

// The column chunks of a pipelined GEMM of `columns` outputs in `splits` equal parts; requires
// columns % splits == 0.
std::vector<ColumnChunk> PipelineChunks(int64_t columns, int64_t splits);

}  // namespace paratune

#endif  // PARATUNE_WORKER_PROBE_TENSOR_PARALLEL_OVERLAP_PLAN_H_
