// Runs a layer's tensor-parallel collectives overlapped with its GEMMs, as
// worker/probe/tensor_parallel_overlap_plan.h plans them after Transformer Engine's
// userbuffers comm+GEMM overlap (Megatron-LM's --tp-comm-overlap): the GEMMs stay on the
// compute stream, in chunks; the collectives go to a communication stream as NCCL grouped
// ncclSend/ncclRecv (ring exchange) or collectives (pipeline, bulk), ordered against the
// compute stream with events both ways. Userbuffers instead copy with SM-driven kernels into
// registered buffers and run the chunks' GEMMs on several streams (docs/probe.md).
//
// Phase times: the compute stream's PhaseTimer sees the GEMM chunks as `gemm` and only the
// time the compute stream waits for a collective as `tp_collectives` (the exposed part), as
// data_parallel_sync.h does for `dp_collectives`.
#ifndef PARATUNE_WORKER_CUDA_TENSOR_PARALLEL_OVERLAP_H_
#define PARATUNE_WORKER_CUDA_TENSOR_PARALLEL_OVERLAP_H_

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "worker/cuda/gemm.h"
#include "worker/cuda/phase_timer.h"
#include "worker/probe/tensor_parallel_overlap_plan.h"

namespace paratune {

// The tensor group's transfers the overlap uses, enqueued on a stream. An interface so that a
// one-GPU test can stand in for the other ranks: NCCL refuses two ranks of one communicator
// on one GPU. Buffers are device memory untouched until the transfer is done on its stream.
class TensorParallelTransport {
 public:
  virtual ~TensorParallelTransport() = default;
  virtual int64_t size() const = 0;
  virtual int64_t rank() const = 0;
  // One ring step, every rank at once: `bytes` from `send` to rank + 1, `bytes` from rank - 1
  // into `receive` (mod size), posted together.
  virtual absl::Status Exchange(const void* send, void* receive, int64_t bytes,
                                cudaStream_t stream) = 0;
  // `count` elements per rank, as communicators.h's AllGather and ReduceScatter (sum).
  virtual absl::Status AllGather(const __nv_bfloat16* send, __nv_bfloat16* receive, int64_t count,
                                 cudaStream_t stream) = 0;
  virtual absl::Status ReduceScatter(const __nv_bfloat16* send, __nv_bfloat16* receive,
                                     int64_t count, cudaStream_t stream) = 0;
};

// Over the tensor group's communicator (borrowed); each call returns NcclStatus's error.
class NcclTensorParallelTransport : public TensorParallelTransport {
 public:
  NcclTensorParallelTransport(ncclComm_t comm, int64_t size, int64_t rank)
      : comm_(comm), size_(size), rank_(rank) {}

  int64_t size() const override { return size_; }
  int64_t rank() const override { return rank_; }
  absl::Status Exchange(const void* send, void* receive, int64_t bytes,
                        cudaStream_t stream) override;
  absl::Status AllGather(const __nv_bfloat16* send, __nv_bfloat16* receive, int64_t count,
                         cudaStream_t stream) override;
  absl::Status ReduceScatter(const __nv_bfloat16* send, __nv_bfloat16* receive, int64_t count,
                             cudaStream_t stream) override;

 private:
  ncclComm_t comm_;
  int64_t size_;
  int64_t rank_;
};

// Not thread-safe: one per rank, on that rank's thread and device.
class TensorParallelOverlap {
 public:
  // Everything is borrowed. `plan` is for transport->size() ranks. GEMMs run on `compute`
  // (the only user of `gemm`'s workspace), transfers on `communication`. INVALID_ARGUMENT
  // when the plan and the transport disagree on the ranks; INTERNAL for a CUDA failure.
  static absl::StatusOr<std::unique_ptr<TensorParallelOverlap>> Create(
      const TensorParallelOverlapPlan& plan, TensorParallelTransport* transport, Gemm* gemm,
      cudaStream_t compute, cudaStream_t communication, PhaseTimer* timer);
  TensorParallelOverlap(const TensorParallelOverlap&) = delete;
  TensorParallelOverlap& operator=(const TensorParallelOverlap&) = delete;
  ~TensorParallelOverlap();

  // Ring exchange all-gather + GEMM (qkv_fprop, fc1_fprop, proj_dgrad, fc2_dgrad).
  // `product` is the whole product over the gathered rows: A (not transposed, lda) is the
  // gathered buffer of size() x `rows` rows, rank j's at row j rows, and C (ldc, c_type) the
  // [size() rows, n] result; `own` [rows, lda] is this rank's rows, which the first step reads
  // in place. Each step multiplies the chunk held into its rows of C while the chunk moves on.
  // With `keep_own` this rank's rows are also copied into the gathered buffer, so that it ends
  // whole (a weight gradient reads it). INVALID_ARGUMENT for a product that is not such a
  // row-chunked one; the transport's or cuBLASLt's error otherwise.
  absl::Status AllGatherGemm(const GemmArgs& product, const __nv_bfloat16* own, int64_t rows,
                             bool keep_own);

  // Pipelined GEMM + reduce-scatter (proj_fprop, fc2_fprop). `product` is nn.Linear's forward
  // (LinearForward: C [size() rows, n] bf16 = A B^T, B [n, k]); its C is the partial sums'
  // buffer, which the chunks use as the plan's splits contiguous [size() rows, n / splits]
  // blocks. Each block's product is reduce-scattered into `reduced` (rows x n elements, the
  // same blocks of [rows, n / splits]) as soon as it is done, then placed in its columns of
  // `out` [rows, n]. On return the compute stream waits for `out`. INVALID_ARGUMENT for another
  // product shape or n not a multiple of the splits.
  absl::Status GemmReduceScatter(const GemmArgs& product, int64_t rows, __nv_bfloat16* reduced,
                                 __nv_bfloat16* out);

  // Bulk overlap of a column-parallel linear's backward (qkv/fc1 dgrad and wgrad): the
  // all-gather of `own` (`count` elements per rank) into `gathered` runs beside
  // `input_gradient`; then the reduce-scatter of input_gradient's C (bf16, `reduced_count`
  // elements per rank) into `reduced` runs beside `weight_gradient`, which reads `gathered`.
  // On return the compute stream waits for `reduced`.
  absl::Status BulkBackward(const __nv_bfloat16* own, __nv_bfloat16* gathered, int64_t count,
                            const GemmArgs& input_gradient, const GemmArgs& weight_gradient,
                            __nv_bfloat16* reduced, int64_t reduced_count);

 private:
  TensorParallelOverlap(const TensorParallelOverlapPlan& plan, TensorParallelTransport* transport,
                        Gemm* gemm, cudaStream_t compute, cudaStream_t communication,
                        PhaseTimer* timer)
      : plan_(plan),
        transport_(transport),
        gemm_(gemm),
        compute_(compute),
        communication_(communication),
        timer_(timer) {}

  // The communication stream waits for the work given to the compute stream so far.
  absl::Status FollowCompute();
  // Records `event` after the work given to the communication stream so far.
  absl::Status Record(cudaEvent_t event);
  // The compute stream waits for `event`, counted as tp_collectives.
  absl::Status Wait(cudaEvent_t event);

  const TensorParallelOverlapPlan plan_;
  TensorParallelTransport* transport_;
  Gemm* gemm_;
  cudaStream_t compute_;
  cudaStream_t communication_;
  PhaseTimer* timer_;
  cudaEvent_t dispatch_ = nullptr;  // compute -> communication
  cudaEvent_t gathered_ = nullptr;  // communication -> compute
  cudaEvent_t reduced_ = nullptr;   // communication -> compute
};

}  // namespace paratune

#endif  // PARATUNE_WORKER_CUDA_TENSOR_PARALLEL_OVERLAP_H_
