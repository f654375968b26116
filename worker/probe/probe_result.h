// A probe's ProbeResult from what its GPUs measured (or from why it failed): the step
// statistics, the throughput in the estimator's FLOP convention, the memory model's terms
// next to the allocation, and what was measured and what modelled.
#ifndef PARATUNE_WORKER_PROBE_PROBE_RESULT_H_
#define PARATUNE_WORKER_PROBE_PROBE_RESULT_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "proto/probe.pb.h"
#include "worker/probe/probe_phase.h"
#include "worker/probe/probe_spec.h"
#include "worker/probe/rank_layout.h"

namespace paratune {

enum class CollectiveOperation { kAllGather, kReduceScatter, kAllReduce, kSendRecv };

// "all_gather", "reduce_scatter", "all_reduce", "send_recv".
const char* CollectiveOperationName(CollectiveOperation operation);

// nccl-tests' bus-bandwidth factor (doc/PERFORMANCE.md): (n-1)/n for all-gather and
// reduce-scatter, 2(n-1)/n for all-reduce, 1 for send/recv.
double BusBandwidthFactor(CollectiveOperation operation, int64_t ranks);

// One communicator's benchmark.
struct CollectiveMeasurement {
  RankGroup group = RankGroup::kTensor;
  CollectiveOperation operation = CollectiveOperation::kAllGather;
  int64_t ranks = 0;
  int64_t bytes = 0;   // nccl-tests' size (CollectiveBandwidth.bytes)
  double seconds = 0;  // per operation, slowest rank
};

// The GPUs and software the probe ran on.
struct DeviceDescription {
  std::string gpu_name;
  std::string driver_version;
  std::string cuda_driver_version;
  std::string cuda_runtime_version;
  std::string nccl_version;
};

// What a probe's ranks measured, reduced over all of them (every process of a gang holds the
// same values).
struct ProbeMeasurement {
  // Seconds of each timed step on its slowest rank: timed_steps steps of each of
  // ProbeSpec::TimedMicroBatches, in that order.
  std::vector<double> step_seconds;
  // Seconds per phase of the instrumented step, slowest rank per phase.
  std::array<double, static_cast<int>(ProbePhase::kCount)> phase_seconds{};
  std::vector<CollectiveMeasurement> collectives;
  // The most device memory in use on any rank's GPU (cudaMemGetInfo), and that rank's
  // pipeline stage.
  int64_t peak_memory_bytes = 0;
  int64_t peak_memory_stage = 0;
  DeviceDescription device;
  // The attention forward and backward passes' kernels and why they are not fused
  // (worker/cuda/attention.h); one rank's, as every rank's layers have the same shapes.
  std::string attention_kernel;
  std::string attention_fallback_reason;
  std::string attention_backward_kernel;
  std::string attention_backward_fallback_reason;
};

// Whether the data-parallel gradient reduce-scatter and parameter all-gather of `spec` are
// modelled rather than run: a REPLICA probe of a configuration with data_parallel > 1.
bool DataParallelModelled(const ProbeSpec& spec);

// An OK result. Step times are the measured ones (with short steps: the full steps
// extrapolated from them, the raw series kept in short_steps; INFRA_ERROR when they cannot be
// extrapolated) plus, when DataParallelModelled, the performance model's exposed
// data-parallel seconds; tokens/s and TFLOP/s per GPU count the
// whole configuration (global batch x sequence per step; ModelFlopsPerStep over
// dp x tp x pp x cp GPUs), as every backend does.
v1::ProbeResult ResultFromMeasurement(const ProbeSpec& spec, const ProbeMeasurement& measurement);

// The outcome of a probe that stopped on `error`: OUT_OF_MEMORY for RESOURCE_EXHAUSTED (an
// allocation failed), INFRA_ERROR for UNAVAILABLE and FAILED_PRECONDITION (no GPU, a driver
// too old, a GPU index the machine lacks: another worker may succeed), CRASH otherwise.
v1::ProbeOutcome OutcomeForError(const absl::Status& error);

// A failed result: OutcomeForError's outcome, the error's message, backend "cuda".
v1::ProbeResult ResultFromError(const absl::Status& error);

}  // namespace paratune

#endif  // PARATUNE_WORKER_PROBE_PROBE_RESULT_H_
