// One rank's whole probe, on its own thread and GPU: set-up, warm-up, the nccl-tests
// measurement protocol (a barrier, then timed steps between CUDA events), one instrumented
// step for the phase times, the collective benchmarks and the peak memory, each reduced over
// every rank of the probe so that every process reports the same figures.
#ifndef PARATUNE_WORKER_CUDA_RANK_RUNNER_H_
#define PARATUNE_WORKER_CUDA_RANK_RUNNER_H_

#include <nccl.h>

#include <cstdint>

#include "absl/status/statusor.h"
#include "worker/probe/probe_report.h"
#include "worker/probe/probe_spec.h"

namespace paratune {

// Runs local rank `local_rank` of `spec` (global rank spec.first_rank() + local_rank, on
// device spec.gpu_indices()[local_rank]) in the world that `id` names. Every rank of the
// world must run. Errors: RESOURCE_EXHAUSTED when the footprint (or NCCL's or cuBLAS's own
// memory) does not fit, UNAVAILABLE when the device cannot be used, FAILED_PRECONDITION
// when an fp8 probe's device is not Hopper-class (compute capability < 9.0), INTERNAL for a CUDA,
// NCCL or cuBLAS failure; an error on one rank can leave the others waiting in a collective,
// which the caller ends by ending the process.
absl::StatusOr<ProbeMeasurement> RunRank(const ProbeSpec& spec, int64_t local_rank,
                                         const ncclUniqueId& id);

}  // namespace paratune

#endif  // PARATUNE_WORKER_CUDA_RANK_RUNNER_H_
