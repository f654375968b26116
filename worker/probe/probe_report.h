// What a probe's GPUs measured, and the ProbeReport paratune-probe hands its worker of it (or
// of why it failed; proto/probe_report.proto): the timed steps, the phase and collective
// times, the memory model's terms next to the allocation. Both sides of that file: the probe
// writes it, the worker's cuda backend makes a ProbeRun of it (worker/probe_run.h), from which
// the worker builds the ProbeResult as for every backend.
#ifndef PARATUNE_WORKER_PROBE_PROBE_REPORT_H_
#define PARATUNE_WORKER_PROBE_PROBE_REPORT_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "proto/probe.pb.h"
#include "proto/probe_report.pb.h"
#include "worker/probe/probe_phase.h"
#include "worker/probe/probe_spec.h"
#include "worker/probe/rank_layout.h"
#include "worker/probe_run.h"

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

// An OK report: the timed steps as series of ProbeSpec::TimedMicroBatches, the peak memory and
// its stage, and the measurements the probe makes (phases, collectives with their nccl-tests
// bandwidths, the memory model's terms for the peak's stage next to what was allocated, device,
// attention kernels).
v1::ProbeReport ReportFromMeasurement(const ProbeSpec& spec, const ProbeMeasurement& measurement);

// The outcome of a probe that stopped on `error`: OUT_OF_MEMORY for RESOURCE_EXHAUSTED (an
// allocation failed), INFRA_ERROR for UNAVAILABLE and FAILED_PRECONDITION (no GPU, a driver
// too old, a GPU index the machine lacks: another worker may succeed), CRASH otherwise.
v1::ProbeOutcome OutcomeForError(const absl::Status& error);

// A failed report: OutcomeForError's outcome and the error's message.
v1::ProbeReport ReportFromError(const absl::Status& error);

// The run a report of `spec`'s probe stands for: measured; every phase of the configuration's
// step measured, but the data-parallel collectives modelled when DataParallelModelled (the
// builder adds the performance model's time to the steps); the peak memory measured, on its
// stage next to the estimate. An OK report whose timed steps are not one series of timed_steps
// positive seconds per count of TimedMicroBatches is a PROBE_CRASH naming the field and value:
// the worker and paratune-probe are then from different builds.
ProbeRun RunFromReport(const ProbeSpec& spec, const v1::ProbeReport& report);

}  // namespace paratune

#endif  // PARATUNE_WORKER_PROBE_PROBE_REPORT_H_
