#include "worker/cuda/phase_timer.h"

#include "common/status_macros.h"
#include "worker/cuda/cuda_status.h"

namespace paratune {

PhaseTimer::~PhaseTimer() {
  for (cudaEvent_t event : events_) cudaEventDestroy(event);
}

void PhaseTimer::Start() {
  running_ = true;
  used_ = 0;
}

absl::Status PhaseTimer::Stop() {
  // The closing event ends the last phase; its own phase is never read.
  PT_RETURN_IF_ERROR(Record(ProbePhase::kCount));
  running_ = false;
  return absl::OkStatus();
}

absl::Status PhaseTimer::Mark(ProbePhase phase) {
  if (!running_) return absl::OkStatus();
  return Record(phase);
}

absl::Status PhaseTimer::Record(ProbePhase phase) {
  if (used_ == events_.size()) {
    cudaEvent_t event;
    PT_RETURN_IF_ERROR(CudaStatus(cudaEventCreate(&event), "cudaEventCreate"));
    events_.push_back(event);
    phases_.push_back(phase);
  } else {
    phases_[used_] = phase;
  }
  PT_RETURN_IF_ERROR(CudaStatus(cudaEventRecord(events_[used_], stream_), "cudaEventRecord"));
  ++used_;
  return absl::OkStatus();
}

absl::StatusOr<std::array<double, static_cast<int>(ProbePhase::kCount)>> PhaseTimer::Seconds()
    const {
  std::array<double, static_cast<int>(ProbePhase::kCount)> seconds{};
  for (size_t i = 0; i + 1 < used_; ++i) {
    float milliseconds = 0;
    PT_RETURN_IF_ERROR(CudaStatus(cudaEventElapsedTime(&milliseconds, events_[i], events_[i + 1]),
                                  "cudaEventElapsedTime"));
    seconds[static_cast<int>(phases_[i])] += milliseconds / 1e3;
  }
  return seconds;
}

}  // namespace paratune
