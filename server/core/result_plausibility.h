// Whether a probe result could have come from the probe it reports (docs/scheduler.md,
// "Plausible results"): a worker holding a lease can send any figures in range
// (ValidateProbeResult, worker_request.h), so the figures the search ranks by are held to what
// the leased GPUs and backend can do. Pure functions.
#ifndef PARATUNE_SERVER_CORE_RESULT_PLAUSIBILITY_H_
#define PARATUNE_SERVER_CORE_RESULT_PLAUSIBILITY_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "proto/probe.pb.h"
#include "proto/search.pb.h"
#include "proto/worker.pb.h"

namespace paratune {

// How far a figure may pass its bound before it is refused: measurement noise and rounding,
// not a different machine. The peak is a datasheet's dense tensor-core peak, which model FLOPs
// (DESIGN.md §5.3) cannot reach; the memory is what the device reported at registration,
// which a measured peak cannot exceed.
inline constexpr double kPeakTflopsTolerance = 0.02;
inline constexpr double kPeakMemoryTolerance = 0.01;

// What a result of one lease may show.
struct ResultLimits {
  // The backend the search's probes run with (ProbeSettings.backend), which the lease's
  // assignment named.
  std::string backend;
  // The dense peak per GPU of the search's GPU type in its training precision
  // (DensePeakTflops, estimator/performance_model.h), TFLOP/s, and its name for people:
  // "the dense bf16 peak of h100-80gb".
  double peak_tflops_per_gpu = 0;
  std::string peak_name;
  // The reporting worker's name and the memory per GPU it registered (Gpu.memory_bytes).
  std::string worker;
  int64_t gpu_memory_bytes = 0;
};

// The limits of a result that `worker` reports for a probe of a search of `spec` (validated
// when the search was created). INVALID_ARGUMENT naming the field when the spec's cluster or
// training does not resolve (a spec stored by an older server).
absl::StatusOr<ResultLimits> ResultLimitsOf(const v1::SearchSpec& spec, const v1::Worker& worker);

// INVALID_ARGUMENT naming the field, its value and the bound when `result` (in range and
// agreeing with itself: ValidateProbeResult) cannot come from the lease: a backend other than
// limits.backend; TFLOP/s per GPU more than kPeakTflopsTolerance above the peak; for an OK
// result, peak memory more than kPeakMemoryTolerance above the worker's GPU memory (a probe that
// ran out of memory reports what it asked for, which may exceed it).
absl::Status CheckResultPlausible(const v1::ProbeResult& result, const ResultLimits& limits);

}  // namespace paratune

#endif  // PARATUNE_SERVER_CORE_RESULT_PLAUSIBILITY_H_
