#include "worker/cuda/device_footprint.h"

#include <cuda_runtime_api.h>

#include "absl/strings/str_format.h"
#include "worker/cuda/cuda_status.h"

namespace paratune {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

}  // namespace

absl::StatusOr<std::unique_ptr<DeviceFootprint>> DeviceFootprint::Allocate(
    const FootprintPlan& plan) {
  std::unique_ptr<DeviceFootprint> footprint(new DeviceFootprint(&plan));
  int64_t allocated = 0;
  for (const TermAllocation& term : plan.terms()) {
    void* memory = nullptr;
    if (term.allocated_bytes > 0) {
      const cudaError_t error = cudaMalloc(&memory, static_cast<size_t>(term.allocated_bytes));
      if (error != cudaSuccess) {
        size_t free_bytes = 0;
        size_t total_bytes = 0;
        cudaMemGetInfo(&free_bytes, &total_bytes);
        return CudaStatus(error,
                          absl::StrFormat("cudaMalloc of %s (%.2f GiB) after %.2f GiB of the "
                                          "footprint, with %.2f GiB of %.2f GiB free",
                                          term.name, term.allocated_bytes / kGiB, allocated / kGiB,
                                          free_bytes / kGiB, total_bytes / kGiB));
      }
      allocated += term.allocated_bytes;
    }
    footprint->terms_.push_back(memory);
  }
  return footprint;
}

DeviceFootprint::~DeviceFootprint() {
  for (void* memory : terms_) {
    if (memory != nullptr) cudaFree(memory);
  }
}

void* DeviceFootprint::Address(ProbeBuffer buffer) const {
  const BufferPlacement& placement = plan_->placement(buffer);
  if (placement.bytes == 0) return nullptr;
  return static_cast<char*>(terms_[placement.term]) + placement.offset;
}

}  // namespace paratune
