#include "worker/cuda/tensor_parallel_overlap.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "worker/cuda/communicators.h"
#include "worker/cuda/cuda_status.h"
#include "worker/cuda/fp8_kernels.h"
#include "worker/cuda/ordering_event.h"

namespace paratune {
namespace {

using bf16 = __nv_bfloat16;

int64_t OutputBytes(GemmOutput type) {
  return type == GemmOutput::kFloat ? sizeof(float) : sizeof(bf16);
}

// What the methods need of a bf16 or an fp8 product, overloaded: the A operand's rows and the
// B operand's rows (of a B stored [n, k]), as bytes.
absl::Status Run(Gemm* gemm, const GemmArgs& product, cudaStream_t stream) {
  return gemm->Run(product, stream);
}
absl::Status Run(Gemm* gemm, const Fp8GemmArgs& product, cudaStream_t stream) {
  return gemm->RunFp8(product, stream);
}

// Whether A's rows are stored as such (one product): fp8 products always are.
bool RowsOfA(const GemmArgs& product) { return !product.transpose_a && product.batch == 1; }
bool RowsOfA(const Fp8GemmArgs&) { return true; }
// Whether B is stored [n, k], its rows the output's columns: fp8 products always are.
bool RowsOfB(const GemmArgs& product) {
  return !product.transpose_a && product.transpose_b && product.batch == 1;
}
bool RowsOfB(const Fp8GemmArgs&) { return true; }

int64_t ElementBytes(const GemmArgs&) { return sizeof(bf16); }
int64_t ElementBytes(const Fp8GemmArgs&) { return 1; }

const void* MatrixA(const GemmArgs& product) { return product.a; }
const void* MatrixA(const Fp8GemmArgs& product) { return product.a.data; }
const void* MatrixB(const GemmArgs& product) { return product.b; }
const void* MatrixB(const Fp8GemmArgs& product) { return product.b.data; }
void SetA(GemmArgs* product, const void* a) { product->a = static_cast<const bf16*>(a); }
void SetA(Fp8GemmArgs* product, const void* a) { product->a.data = a; }
void SetB(GemmArgs* product, const void* b) { product->b = static_cast<const bf16*>(b); }
void SetB(Fp8GemmArgs* product, const void* b) { product->b.data = b; }

}  // namespace

absl::Status NcclTensorParallelTransport::Exchange(const void* send, void* receive, int64_t bytes,
                                                   cudaStream_t stream) {
  const int next = static_cast<int>((rank_ + 1) % size_);
  const int previous = static_cast<int>((rank_ + size_ - 1) % size_);
  // PeerTransfer holds a buffer of either direction; a send only reads it.
  return SendReceive(
      comm_, {{true, next, const_cast<void*>(send), bytes}, {false, previous, receive, bytes}},
      ncclUint8, stream);
}

absl::Status NcclTensorParallelTransport::AllGather(const void* send, void* receive, int64_t bytes,
                                                    cudaStream_t stream) {
  return paratune::AllGather(comm_, send, receive, bytes, ncclUint8, stream);
}

absl::Status NcclTensorParallelTransport::ReduceScatter(const bf16* send, bf16* receive,
                                                        int64_t count, cudaStream_t stream) {
  return paratune::ReduceScatter(comm_, send, receive, count, ncclBfloat16, stream);
}

absl::StatusOr<std::unique_ptr<TensorParallelOverlap>> TensorParallelOverlap::Create(
    const TensorParallelOverlapPlan& plan, TensorParallelTransport* transport, Gemm* gemm,
    cudaStream_t compute, cudaStream_t communication, PhaseTimer* timer) {
  if (plan.tensor_parallel != transport->size()) {
    return absl::InvalidArgumentError(absl::StrCat("plan.tensor_parallel (", plan.tensor_parallel,
                                                   ") differs from the transport's ranks (",
                                                   transport->size(), ")"));
  }
  std::unique_ptr<TensorParallelOverlap> overlap(
      new TensorParallelOverlap(plan, transport, gemm, compute, communication, timer));
  PT_RETURN_IF_ERROR(NewOrderingEvent("tensor-parallel overlap", &overlap->dispatch_));
  PT_RETURN_IF_ERROR(NewOrderingEvent("tensor-parallel overlap", &overlap->gathered_));
  PT_RETURN_IF_ERROR(NewOrderingEvent("tensor-parallel overlap", &overlap->reduced_));
  return overlap;
}

TensorParallelOverlap::~TensorParallelOverlap() {
  for (cudaEvent_t event : {dispatch_, gathered_, reduced_}) {
    if (event != nullptr) cudaEventDestroy(event);
  }
}

absl::Status TensorParallelOverlap::FollowCompute() {
  // Recording again is safe: a wait uses the event's state when it is enqueued.
  PT_RETURN_IF_ERROR(CudaStatus(cudaEventRecord(dispatch_, compute_),
                                "cudaEventRecord(tensor-parallel dispatch)"));
  return CudaStatus(cudaStreamWaitEvent(communication_, dispatch_, 0),
                    "cudaStreamWaitEvent(tensor-parallel communication stream)");
}

absl::Status TensorParallelOverlap::Record(cudaEvent_t event) {
  return CudaStatus(cudaEventRecord(event, communication_),
                    "cudaEventRecord(tensor-parallel communication)");
}

absl::Status TensorParallelOverlap::Wait(cudaEvent_t event) {
  PT_RETURN_IF_ERROR(timer_->Mark(ProbePhase::kTpCollectives));
  return CudaStatus(cudaStreamWaitEvent(compute_, event, 0),
                    "cudaStreamWaitEvent(tensor-parallel communication)");
}

absl::Status TensorParallelOverlap::AllGatherGemm(const GemmArgs& product, const bf16* own,
                                                  int64_t rows, bool keep_own) {
  return AllGatherGemmOf(product, own, rows, keep_own);
}

absl::Status TensorParallelOverlap::AllGatherGemm(const Fp8GemmArgs& product, const void* own,
                                                  int64_t rows, bool keep_own) {
  return AllGatherGemmOf(product, own, rows, keep_own);
}

template <typename Product>
absl::Status TensorParallelOverlap::AllGatherGemmOf(const Product& product, const void* own,
                                                    int64_t rows, bool keep_own) {
  const int64_t size = transport_->size();
  const int64_t rank = transport_->rank();
  if (!RowsOfA(product) || product.m != size * rows) {
    return absl::InvalidArgumentError(absl::StrCat("product (m ", product.m, ") is not ", size,
                                                   " chunks of ", rows, " untransposed rows"));
  }
  char* gathered = static_cast<char*>(const_cast<void*>(MatrixA(product)));
  const int64_t chunk_bytes = rows * product.lda * ElementBytes(product);
  // The first step's chunk is the rank's own rows, read in place.
  auto rows_of = [&](int64_t chunk) -> const void* {
    return chunk == rank ? own : gathered + chunk * chunk_bytes;
  };
  // The rank's rows are written and the gathered buffer's earlier readers are done.
  PT_RETURN_IF_ERROR(FollowCompute());
  if (keep_own) {
    PT_RETURN_IF_ERROR(CudaStatus(cudaMemcpyAsync(gathered + rank * chunk_bytes, own, chunk_bytes,
                                                  cudaMemcpyDeviceToDevice, communication_),
                                  "cudaMemcpyAsync(own rows into the gathered buffer)"));
  }
  char* out = static_cast<char*>(product.c);
  const int64_t out_chunk_bytes = rows * product.ldc * OutputBytes(product.c_type);
  for (const RingExchangeStep& step : RingExchangeOrder(size, rank)) {
    const bool exchange = step.send_chunk >= 0;
    if (exchange) {
      PT_RETURN_IF_ERROR(transport_->Exchange(rows_of(step.send_chunk),
                                              gathered + step.receive_chunk * chunk_bytes,
                                              chunk_bytes, communication_));
      PT_RETURN_IF_ERROR(Record(gathered_));
    }
    Product chunk = product;
    chunk.m = rows;
    SetA(&chunk, rows_of(step.compute_chunk));
    chunk.c = out + step.compute_chunk * out_chunk_bytes;
    PT_RETURN_IF_ERROR(timer_->Mark(ProbePhase::kGemm));
    PT_RETURN_IF_ERROR(Run(gemm_, chunk, compute_));
    // The next step multiplies the chunk this exchange brings.
    if (exchange) PT_RETURN_IF_ERROR(Wait(gathered_));
  }
  return absl::OkStatus();
}

absl::Status TensorParallelOverlap::GemmReduceScatter(const GemmArgs& product, int64_t rows,
                                                      bf16* reduced, bf16* out) {
  return GemmReduceScatterOf(product, rows, reduced, out);
}

absl::Status TensorParallelOverlap::GemmReduceScatter(const Fp8GemmArgs& product, int64_t rows,
                                                      bf16* reduced, bf16* out) {
  return GemmReduceScatterOf(product, rows, reduced, out);
}

template <typename Product>
absl::Status TensorParallelOverlap::GemmReduceScatterOf(const Product& product, int64_t rows,
                                                        bf16* reduced, bf16* out) {
  const int64_t size = transport_->size();
  const int64_t splits = plan_.pipeline_splits;
  if (!RowsOfB(product) || product.c_type != GemmOutput::kBf16 || product.m != size * rows ||
      product.ldc != product.n || product.n % splits != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("product (m ", product.m, ", n ", product.n, ", ldc ", product.ldc,
                     ") is not a packed bf16 nn.Linear forward of ", size, " x ", rows,
                     " rows and columns divisible by ", splits, " splits"));
  }
  bf16* partial = static_cast<bf16*>(product.c);
  const char* weight = static_cast<const char*>(MatrixB(product));
  for (const ColumnChunk& columns : PipelineChunks(product.n, splits)) {
    // Block i of the partial sums holds columns [first, first + count) of every row, packed.
    bf16* block = partial + product.m * columns.first;
    bf16* block_reduced = reduced + rows * columns.first;
    Product chunk = product;
    chunk.n = columns.count;
    SetB(&chunk, weight + columns.first * product.ldb * ElementBytes(product));
    chunk.c = block;
    chunk.ldc = columns.count;
    PT_RETURN_IF_ERROR(timer_->Mark(ProbePhase::kGemm));
    PT_RETURN_IF_ERROR(Run(gemm_, chunk, compute_));
    PT_RETURN_IF_ERROR(FollowCompute());
    PT_RETURN_IF_ERROR(
        transport_->ReduceScatter(block, block_reduced, rows * columns.count, communication_));
    const size_t width = columns.count * sizeof(bf16);
    PT_RETURN_IF_ERROR(
        CudaStatus(cudaMemcpy2DAsync(out + columns.first, product.n * sizeof(bf16), block_reduced,
                                     width, width, rows, cudaMemcpyDeviceToDevice, communication_),
                   "cudaMemcpy2DAsync(reduced columns into their rows)"));
  }
  PT_RETURN_IF_ERROR(Record(reduced_));
  return Wait(reduced_);
}

absl::Status TensorParallelOverlap::BulkBackward(const bf16* own, bf16* gathered, int64_t count,
                                                 const GemmArgs& input_gradient,
                                                 const GemmArgs& weight_gradient, bf16* reduced,
                                                 int64_t reduced_count) {
  return BulkBackwardOf(
      own, gathered, count * static_cast<int64_t>(sizeof(bf16)), input_gradient, weight_gradient,
      [] { return absl::OkStatus(); }, reduced, reduced_count);
}

absl::Status TensorParallelOverlap::BulkBackward(const void* own, void* gathered, int64_t rows,
                                                 int64_t columns, void* gathered_transposed,
                                                 const Fp8GemmArgs& input_gradient,
                                                 const Fp8GemmArgs& weight_gradient, bf16* reduced,
                                                 int64_t reduced_count) {
  auto transpose = [&] {
    PT_RETURN_IF_ERROR(timer_->Mark(ProbePhase::kElementwise));
    return CudaStatus(
        TransposeFp8(gathered, transport_->size() * rows, columns, gathered_transposed, compute_),
        "TransposeFp8(gathered input)");
  };
  return BulkBackwardOf(own, gathered, rows * columns, input_gradient, weight_gradient, transpose,
                        reduced, reduced_count);
}

template <typename Product>
absl::Status TensorParallelOverlap::BulkBackwardOf(const void* own, void* gathered, int64_t bytes,
                                                   const Product& input_gradient,
                                                   const Product& weight_gradient,
                                                   absl::FunctionRef<absl::Status()> after_gather,
                                                   bf16* reduced, int64_t reduced_count) {
  if (input_gradient.c_type != GemmOutput::kBf16) {
    return absl::InvalidArgumentError("input_gradient.c_type must be bf16 to reduce-scatter");
  }
  PT_RETURN_IF_ERROR(FollowCompute());
  PT_RETURN_IF_ERROR(transport_->AllGather(own, gathered, bytes, communication_));
  PT_RETURN_IF_ERROR(Record(gathered_));
  PT_RETURN_IF_ERROR(timer_->Mark(ProbePhase::kGemm));
  PT_RETURN_IF_ERROR(Run(gemm_, input_gradient, compute_));
  PT_RETURN_IF_ERROR(FollowCompute());
  PT_RETURN_IF_ERROR(transport_->ReduceScatter(static_cast<const bf16*>(input_gradient.c), reduced,
                                               reduced_count, communication_));
  PT_RETURN_IF_ERROR(Record(reduced_));
  PT_RETURN_IF_ERROR(Wait(gathered_));
  PT_RETURN_IF_ERROR(after_gather());
  PT_RETURN_IF_ERROR(timer_->Mark(ProbePhase::kGemm));
  PT_RETURN_IF_ERROR(Run(gemm_, weight_gradient, compute_));
  return Wait(reduced_);
}

}  // namespace paratune
