// Splits the work a stream runs into phases with CUDA events: Mark(p) says that what is
// enqueued from now until the next Mark belongs to phase p. Used for one instrumented step,
// so the timed steps carry no events (docs/probe.md).
#ifndef PARATUNE_WORKER_CUDA_PHASE_TIMER_H_
#define PARATUNE_WORKER_CUDA_PHASE_TIMER_H_

#include <cuda_runtime_api.h>

#include <array>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "worker/probe/probe_phase.h"

namespace paratune {

// Not thread-safe; one per stream.
class PhaseTimer {
 public:
  explicit PhaseTimer(cudaStream_t stream) : stream_(stream) {}
  PhaseTimer(const PhaseTimer&) = delete;
  PhaseTimer& operator=(const PhaseTimer&) = delete;
  ~PhaseTimer();

  // Starts a measurement (forgetting any earlier one); until Stop, Mark records events.
  void Start();
  // Ends the measurement at the current point of the stream.
  absl::Status Stop();
  // Nothing while no measurement runs, so the training step calls it unconditionally.
  absl::Status Mark(ProbePhase phase);

  // Seconds per phase of the last measurement; call after the stream has passed Stop's
  // point (e.g. cudaStreamSynchronize).
  absl::StatusOr<std::array<double, static_cast<int>(ProbePhase::kCount)>> Seconds() const;

 private:
  absl::Status Record(ProbePhase phase);

  cudaStream_t stream_;
  bool running_ = false;
  // events_[i] starts phases_[i]; events are reused across measurements.
  std::vector<cudaEvent_t> events_;
  std::vector<ProbePhase> phases_;
  size_t used_ = 0;
};

}  // namespace paratune

#endif  // PARATUNE_WORKER_CUDA_PHASE_TIMER_H_
