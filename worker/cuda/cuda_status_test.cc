// The status boundary runs without a GPU: error strings and codes are host-side.
#include "worker/cuda/cuda_status.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;

TEST(CudaStatusTest, SuccessIsOk) {
  EXPECT_TRUE(CudaStatus(cudaSuccess, "x").ok());
  EXPECT_TRUE(NcclStatus(ncclSuccess, "x").ok());
  EXPECT_TRUE(CublasStatus(CUBLAS_STATUS_SUCCESS, "x").ok());
  EXPECT_TRUE(CudnnStatus(CUDNN_STATUS_SUCCESS, "x").ok());
}

TEST(CudaStatusTest, GraphsCudnnCannotRunAreUnimplementedSoTheCallerFallsBack) {
  for (cudnnStatus_t status : {CUDNN_STATUS_NOT_SUPPORTED, CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN,
                               CUDNN_STATUS_NOT_SUPPORTED_SHAPE}) {
    const absl::Status cudnn = CudnnStatus(status, "attention forward plan");
    EXPECT_EQ(cudnn.code(), absl::StatusCode::kUnimplemented) << cudnnGetErrorString(status);
    EXPECT_THAT(cudnn.message(),
                HasSubstr(std::string("attention forward plan: ") + cudnnGetErrorString(status)));
  }
  EXPECT_EQ(CudnnStatus(CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED, "x").code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(CudnnStatus(CUDNN_STATUS_BAD_PARAM, "x").code(), absl::StatusCode::kInternal);
}

TEST(CudaStatusTest, AllocationFailureIsAMeasuredOutOfMemory) {
  const absl::Status status = CudaStatus(cudaErrorMemoryAllocation, "cudaMalloc of weights");
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(status.message(), HasSubstr("cudaMalloc of weights: "));
  EXPECT_THAT(status.message(), HasSubstr(cudaGetErrorString(cudaErrorMemoryAllocation)));
  EXPECT_THAT(status.message(), HasSubstr("cudaErrorMemoryAllocation"));
  EXPECT_EQ(CublasStatus(CUBLAS_STATUS_ALLOC_FAILED, "cublasLtCreate").code(),
            absl::StatusCode::kResourceExhausted);
}

TEST(CudaStatusTest, MachinesThatCannotRunCudaAreUnavailable) {
  for (cudaError_t error : {cudaErrorNoDevice, cudaErrorInsufficientDriver, cudaErrorInvalidDevice,
                            cudaErrorNoKernelImageForDevice}) {
    EXPECT_EQ(CudaStatus(error, "cudaSetDevice(3)").code(), absl::StatusCode::kUnavailable)
        << cudaGetErrorName(error);
  }
}

TEST(CudaStatusTest, OtherFailuresAreInternalWithTheLibrarysMessage) {
  const absl::Status cuda = CudaStatus(cudaErrorIllegalAddress, "RmsNormForward");
  EXPECT_EQ(cuda.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(cuda.message(), HasSubstr("an illegal memory access was encountered"));
  const absl::Status nccl = NcclStatus(ncclInvalidArgument, "ncclAllGather");
  EXPECT_EQ(nccl.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(nccl.message(),
              HasSubstr(std::string("ncclAllGather: ") + ncclGetErrorString(ncclInvalidArgument)));
  const absl::Status cublas = CublasStatus(CUBLAS_STATUS_NOT_SUPPORTED, "GEMM m 1 n 2 k 3");
  EXPECT_EQ(cublas.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(cublas.message(), HasSubstr("GEMM m 1 n 2 k 3: "));
}

}  // namespace
}  // namespace paratune
