// A rank's footprint on its GPU: every term of a FootprintPlan allocated with cudaMalloc, and
// the probe's buffers inside them.
#ifndef PARATUNE_WORKER_CUDA_DEVICE_FOOTPRINT_H_
#define PARATUNE_WORKER_CUDA_DEVICE_FOOTPRINT_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "worker/probe/footprint_plan.h"

namespace paratune {

class DeviceFootprint {
 public:
  // Allocates the plan's terms on the current device, in plan order. RESOURCE_EXHAUSTED when
  // one does not fit, naming the term, its bytes, the bytes allocated before it and the
  // device's free memory: the probe's measured out-of-memory.
  static absl::StatusOr<std::unique_ptr<DeviceFootprint>> Allocate(const FootprintPlan& plan);
  DeviceFootprint(const DeviceFootprint&) = delete;
  DeviceFootprint& operator=(const DeviceFootprint&) = delete;
  ~DeviceFootprint();

  // The buffer's device address; nullptr for an empty buffer.
  template <typename T>
  T* get(ProbeBuffer buffer) const {
    return static_cast<T*>(Address(buffer));
  }

 private:
  explicit DeviceFootprint(const FootprintPlan* plan) : plan_(plan) {}
  void* Address(ProbeBuffer buffer) const;

  const FootprintPlan* plan_;
  std::vector<void*> terms_;  // one per plan term, nullptr when it allocates nothing
};

}  // namespace paratune

#endif  // PARATUNE_WORKER_CUDA_DEVICE_FOOTPRINT_H_
