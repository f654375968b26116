// The one place where CUDA runtime, NCCL, cuBLAS and cuDNN return codes become absl::Status
// (STYLE.md rule 9). Every caller passes what it was doing, so a message reads
// "cudaMalloc of weights (16.0 GiB): out of memory".
#ifndef PARATUNE_WORKER_CUDA_CUDA_STATUS_H_
#define PARATUNE_WORKER_CUDA_CUDA_STATUS_H_

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <cudnn_graph.h>
#include <nccl.h>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace paratune {

// OK for cudaSuccess. RESOURCE_EXHAUSTED for cudaErrorMemoryAllocation (a measured
// out-of-memory); UNAVAILABLE when the machine cannot run CUDA at all (no device, no or too
// old a driver, no kernel image for the GPU, a device that is busy or missing), so that the
// scheduler retries elsewhere; INTERNAL otherwise. The message is `what`,
// cudaGetErrorString and the error's name.
absl::Status CudaStatus(cudaError_t error, absl::string_view what);

// OK for ncclSuccess. RESOURCE_EXHAUSTED when NCCL ran out of device memory (its last error
// says so); INTERNAL otherwise, with ncclGetErrorString and ncclGetLastError(comm) (comm may
// be null) in the message.
absl::Status NcclStatus(ncclResult_t result, absl::string_view what, ncclComm_t comm = nullptr);

// OK for CUBLAS_STATUS_SUCCESS; RESOURCE_EXHAUSTED for CUBLAS_STATUS_ALLOC_FAILED, INTERNAL
// otherwise, with cublasLtGetStatusString in the message.
absl::Status CublasStatus(cublasStatus_t status, absl::string_view what);

// OK for CUDNN_STATUS_SUCCESS. UNIMPLEMENTED for the CUDNN_STATUS_NOT_SUPPORTED family (cuDNN
// has no engine for the graph or shape: the caller may fall back), RESOURCE_EXHAUSTED for
// an allocation cuDNN could not make, INTERNAL otherwise; the message has
// cudnnGetErrorString and cuDNN's last error message.
absl::Status CudnnStatus(cudnnStatus_t status, absl::string_view what);

}  // namespace paratune

#endif  // PARATUNE_WORKER_CUDA_CUDA_STATUS_H_
