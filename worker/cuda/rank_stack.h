// Everything one rank of a probe runs its steps with, built in order on the current device:
// the compute and communication streams, the rank's communicators (and fp8 amax group), its
// stage's footprint allocated on the device, cuBLASLt, the phase timer, the device's
// DeviceOps initialized with the spec's seed, and the StageRunner that drives them. RunRank
// (rank_runner.h) measures with it; the GPU tests step it as the probe does.
#ifndef PARATUNE_WORKER_CUDA_RANK_STACK_H_
#define PARATUNE_WORKER_CUDA_RANK_STACK_H_

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "worker/cuda/communicators.h"
#include "worker/cuda/cuda_device_ops.h"
#include "worker/cuda/device_footprint.h"
#include "worker/cuda/fp8_amax_group.h"
#include "worker/cuda/gemm.h"
#include "worker/cuda/phase_timer.h"
#include "worker/probe/footprint_plan.h"
#include "worker/probe/optimizer_layout.h"
#include "worker/probe/probe_spec.h"
#include "worker/probe/stage_runner.h"

namespace paratune {

// Not thread-safe: one per rank, on that rank's thread and device.
class RankStack {
 public:
  // Global rank `rank` of `spec` in the world that `id` names, on the current device; every
  // rank of the world must build its own (the communicators' creation blocks until all have
  // joined). RESOURCE_EXHAUSTED when the footprint (or NCCL's or cuBLAS's own memory) does
  // not fit, naming the term; INTERNAL or UNAVAILABLE for a CUDA, NCCL or cuBLAS failure.
  static absl::StatusOr<std::unique_ptr<RankStack>> Create(const ProbeSpec& spec, int64_t rank,
                                                           const ncclUniqueId& id);
  RankStack(const RankStack&) = delete;
  RankStack& operator=(const RankStack&) = delete;

  cudaStream_t stream() const { return streams_.compute; }
  const RankCommunicators& communicators() const { return *communicators_; }
  const FootprintPlan& plan() const { return plan_; }
  const DeviceFootprint& memory() const { return *memory_; }
  const Gemm& gemm() const { return *gemm_; }
  PhaseTimer& timer() { return *timer_; }
  const CudaDeviceOps& ops() const { return *ops_; }
  StageRunner& runner() { return *runner_; }

 private:
  // Created first and destroyed last, after everything that enqueues on them.
  struct Streams {
    Streams() = default;
    Streams(const Streams&) = delete;
    Streams& operator=(const Streams&) = delete;
    ~Streams();
    cudaStream_t compute = nullptr;
    // The overlapped data-parallel collectives'.
    cudaStream_t communication = nullptr;
    // The overlapped tensor-parallel collectives', apart from the data-parallel ones so that
    // a ring step never queues behind a gradient bucket.
    cudaStream_t tensor_communication = nullptr;
  };

  RankStack(const ProbeSpec& spec, int64_t rank);

  Streams streams_;
  std::unique_ptr<RankCommunicators> communicators_;
  std::unique_ptr<Fp8AmaxGroup> amax_group_;
  const FootprintPlan plan_;
  const OptimizerLayout optimizer_;
  std::unique_ptr<DeviceFootprint> memory_;
  std::unique_ptr<Gemm> gemm_;
  std::unique_ptr<PhaseTimer> timer_;
  std::unique_ptr<CudaDeviceOps> ops_;
  std::unique_ptr<StageRunner> runner_;
};

}  // namespace paratune

#endif  // PARATUNE_WORKER_CUDA_RANK_STACK_H_
