// Runs a layer's tensor-parallel collectives overlapped with its GEMMs, as
// worker/probe/tensor_parallel_overlap_plan.h plans them after Transformer Engine's
// userbuffers comm+GEMM overlap (Megatron-LM's --tp-comm-overlap): the GEMMs stay on the
// compute stream, in chunks; the collectives go to a communication stream as NCCL grouped
// ncclSend/ncclRecv (ring exchange) or collectives (pipeline, bulk), ordered against the
// compute stream with events both ways. Userbuffers instead copy with SM-driven kernels into
// registered buffers and run the chunks' GEMMs on several streams (docs/probe.md).
//
// Every method takes bf16 products (GemmArgs) or fp8 ones (Fp8GemmArgs), as Transformer
// Engine overlaps both: in fp8 its all-gather userbuffers hold fp8 (initialize_ub in
// transformer_engine/pytorch/module/base.py gives fp8 buffers to the all-gather overlaps), so
// the ring exchanges and the bulk all-gather move the rank's fp8 rows and each GEMM chunk
// multiplies them in fp8 (CommOverlapP2PBase::split_overlap_ag with fp8 A); the pipelined
// reduce-scatters sum the bf16 outputs of fp8 GEMM chunks (its pipeline buffers are bf16
// unless configured fp8_buf).
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

#include "absl/functional/function_ref.h"
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
  // `bytes` from every rank, rank-ordered in `receive` (communicators.h's AllGather of bytes:
  // bf16 or fp8 rows alike, a gather copies).
  virtual absl::Status AllGather(const void* send, void* receive, int64_t bytes,
                                 cudaStream_t stream) = 0;
  // `count` bf16 elements per rank, as communicators.h's ReduceScatter (sum).
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
  absl::Status AllGather(const void* send, void* receive, int64_t bytes,
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

  // This rank's index in the tensor group (its rows' place in a gathered buffer).
  int64_t rank() const { return transport_->rank(); }

  // Ring exchange all-gather + GEMM (qkv_fprop, fc1_fprop, proj_dgrad, fc2_dgrad).
  // `product` is the whole product over the gathered rows: A (not transposed, lda) is the
  // gathered buffer of size() x `rows` rows, rank j's at row j rows, and C (ldc, c_type) the
  // [size() rows, n] result; `own` [rows, lda] is this rank's rows, which the first step reads
  // in place (it may be their place in the gathered buffer, as where Transformer Engine casts
  // into its userbuffer's local chunk). Each step multiplies the chunk held into its rows of C
  // while the chunk moves on. With `keep_own` this rank's rows are also copied into the
  // gathered buffer, so that it ends whole (a weight gradient reads it). On return the compute
  // stream waits for every chunk. INVALID_ARGUMENT for a product that is not such a
  // row-chunked one; the transport's or cuBLASLt's error otherwise.
  absl::Status AllGatherGemm(const GemmArgs& product, const __nv_bfloat16* own, int64_t rows,
                             bool keep_own);
  // The same with fp8 rows (A's bytes, exchanged as such; a.scale_inverse is this rank's cast's,
  // which the amax reduction over the tensor group makes every rank's). Every chunk keeps
  // cuBLASLt's fp8 rules when the whole product does: its A is rows x lda bytes on.
  absl::Status AllGatherGemm(const Fp8GemmArgs& product, const void* own, int64_t rows,
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
  // The same for an fp8 forward (Fp8LinearForward, bf16 C): each chunk's B is the weight's
  // rows of its columns, ldb bytes apart, so chunks keep cuBLASLt's fp8 alignment.
  absl::Status GemmReduceScatter(const Fp8GemmArgs& product, int64_t rows, __nv_bfloat16* reduced,
                                 __nv_bfloat16* out);

  // Bulk overlap of a column-parallel linear's backward (qkv/fc1 dgrad and wgrad): the
  // all-gather of `own` (`count` elements per rank) into `gathered` runs beside
  // `input_gradient`; then the reduce-scatter of input_gradient's C (bf16, `reduced_count`
  // elements per rank) into `reduced` runs beside `weight_gradient`, which reads `gathered`.
  // On return the compute stream waits for `reduced`.
  absl::Status BulkBackward(const __nv_bfloat16* own, __nv_bfloat16* gathered, int64_t count,
                            const GemmArgs& input_gradient, const GemmArgs& weight_gradient,
                            __nv_bfloat16* reduced, int64_t reduced_count);
  // The same in fp8 (Transformer Engine's LayerNormLinear backward with its fp8 qkv_dgrad /
  // fc1_dgrad userbuffer): `own` is the rank's fp8 input rows [rows, columns], all-gathered as
  // bytes into `gathered` [size() rows, columns] beside `input_gradient`; once they arrive the
  // compute stream transposes them into `gathered_transposed` [columns, size() rows]
  // (TransposeFp8, as Transformer Engine's fp8_transpose of the gathered input: the weight
  // gradient's fp8 operands must be k-contiguous), which `weight_gradient` reads.
  absl::Status BulkBackward(const void* own, void* gathered, int64_t rows, int64_t columns,
                            void* gathered_transposed, const Fp8GemmArgs& input_gradient,
                            const Fp8GemmArgs& weight_gradient, __nv_bfloat16* reduced,
                            int64_t reduced_count);

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
  // The bf16 and fp8 methods' one implementation each (Product: GemmArgs or Fp8GemmArgs).
  // `after_gather` runs on the compute stream once the bulk all-gather arrived, before the
  // weight gradient.
  template <typename Product>
  absl::Status AllGatherGemmOf(const Product& product, const void* own, int64_t rows,
                               bool keep_own);
  template <typename Product>
  absl::Status GemmReduceScatterOf(const Product& product, int64_t rows, __nv_bfloat16* reduced,
                                   __nv_bfloat16* out);
  template <typename Product>
  absl::Status BulkBackwardOf(const void* own, void* gathered, int64_t bytes,
                              const Product& input_gradient, const Product& weight_gradient,
                              absl::FunctionRef<absl::Status()> after_gather,
                              __nv_bfloat16* reduced, int64_t reduced_count);

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
