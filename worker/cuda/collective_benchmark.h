// The bus bandwidth of each communicator of a training step, measured as nccl-tests does
// (doc/PERFORMANCE.md): warm-up operations, then a timed loop between CUDA events, at the
// size and with the operation the step uses on that communicator.
#ifndef PARATUNE_WORKER_CUDA_COLLECTIVE_BENCHMARK_H_
#define PARATUNE_WORKER_CUDA_COLLECTIVE_BENCHMARK_H_

#include <cuda_runtime_api.h>

#include <vector>

#include "absl/status/statusor.h"
#include "worker/cuda/communicators.h"
#include "worker/cuda/device_footprint.h"
#include "worker/probe/footprint_plan.h"
#include "worker/probe/probe_report.h"

namespace paratune {

// Untimed and timed operations per communicator (nccl-tests' defaults -w 5 -n 20).
inline constexpr int kBenchmarkWarmupIterations = 5;
inline constexpr int kBenchmarkTimedIterations = 20;

// One measurement per communicator of more than one rank, in the order tp, cp, dp, pp (dp
// only when `data_parallel` is true: it is not modelled): the TP all-gather of a [T, h]
// activation (all-reduce without sequence parallelism), the CP all-gather of K and V (with
// cp_comm_type p2p one ring step's send/receive of a rank's K and V), the
// gradients' reduce-scatter (all-reduce without the distributed optimizer), the pipeline
// boundary sent to the next stage while receiving from the previous. Every rank must call
// it with the same arguments. Uses the footprint's buffers, whose contents it overwrites.
// Seconds are this rank's; the caller reduces them over ranks.
absl::StatusOr<std::vector<CollectiveMeasurement>> BenchmarkCollectives(
    const RankCommunicators& communicators, const FootprintPlan& plan,
    const DeviceFootprint& memory, bool data_parallel, bool distributed_optimizer,
    bool fp32_gradients, cudaStream_t stream);

}  // namespace paratune

#endif  // PARATUNE_WORKER_CUDA_COLLECTIVE_BENCHMARK_H_
