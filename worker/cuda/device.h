// What the probe asks of the GPU and its software: the devices there are, their names and
// the versions of the driver, CUDA and NCCL, and the memory in use.
#ifndef PARATUNE_WORKER_CUDA_DEVICE_H_
#define PARATUNE_WORKER_CUDA_DEVICE_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/worker.pb.h"
#include "worker/probe/probe_report.h"

namespace paratune {

// Every CUDA device of the machine (index, name, total memory). UNAVAILABLE when there is no
// device or no usable driver.
absl::StatusOr<std::vector<v1::Gpu>> ListGpus();

// The name of device `device` and the software versions. UNAVAILABLE as ListGpus.
absl::StatusOr<DeviceDescription> DescribeDevice(int device);

// Bytes of the current device's memory in use by every process: total - free
// (cudaMemGetInfo), the figure nvidia-smi shows.
absl::StatusOr<int64_t> DeviceMemoryInUse();

}  // namespace paratune

#endif  // PARATUNE_WORKER_CUDA_DEVICE_H_
