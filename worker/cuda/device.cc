#include "worker/cuda/device.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "worker/cuda/cuda_status.h"
#include "worker/cuda/kernel_module_version.h"

namespace paratune {
namespace {

// "13.0" from CUDA's 1000 x major + 10 x minor.
std::string CudaVersionString(int version) {
  return absl::StrCat(version / 1000, ".", version % 1000 / 10);
}

}  // namespace

absl::StatusOr<std::vector<v1::Gpu>> ListGpus() {
  int count = 0;
  PT_RETURN_IF_ERROR(CudaStatus(cudaGetDeviceCount(&count), "cudaGetDeviceCount"));
  std::vector<v1::Gpu> gpus;
  for (int device = 0; device < count; ++device) {
    cudaDeviceProp properties;
    PT_RETURN_IF_ERROR(CudaStatus(cudaGetDeviceProperties(&properties, device),
                                  absl::StrCat("cudaGetDeviceProperties(", device, ")")));
    v1::Gpu& gpu = gpus.emplace_back();
    gpu.set_index(device);
    gpu.set_name(properties.name);
    gpu.set_memory_bytes(static_cast<int64_t>(properties.totalGlobalMem));
  }
  return gpus;
}

absl::StatusOr<DeviceDescription> DescribeDevice(int device) {
  cudaDeviceProp properties;
  PT_RETURN_IF_ERROR(CudaStatus(cudaGetDeviceProperties(&properties, device),
                                absl::StrCat("cudaGetDeviceProperties(", device, ")")));
  int driver = 0;
  int runtime = 0;
  int nccl = 0;
  PT_RETURN_IF_ERROR(CudaStatus(cudaDriverGetVersion(&driver), "cudaDriverGetVersion"));
  PT_RETURN_IF_ERROR(CudaStatus(cudaRuntimeGetVersion(&runtime), "cudaRuntimeGetVersion"));
  PT_RETURN_IF_ERROR(NcclStatus(ncclGetVersion(&nccl), "ncclGetVersion"));
  DeviceDescription description;
  description.gpu_name = properties.name;
  description.driver_version = KernelModuleVersion();
  description.cuda_driver_version = CudaVersionString(driver);
  description.cuda_runtime_version = CudaVersionString(runtime);
  // NCCL_VERSION_CODE: 10000 x major + 100 x minor + patch since 2.9.
  description.nccl_version = absl::StrCat(nccl / 10000, ".", nccl % 10000 / 100, ".", nccl % 100);
  return description;
}

absl::StatusOr<int64_t> DeviceMemoryInUse() {
  size_t free_bytes = 0;
  size_t total_bytes = 0;
  PT_RETURN_IF_ERROR(CudaStatus(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo"));
  return static_cast<int64_t>(total_bytes - free_bytes);
}

}  // namespace paratune
