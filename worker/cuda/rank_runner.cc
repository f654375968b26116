#include "worker/cuda/rank_runner.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "worker/cuda/collective_benchmark.h"
#include "worker/cuda/communicators.h"
#include "worker/cuda/cuda_status.h"
#include "worker/cuda/device.h"
#include "worker/cuda/phase_timer.h"
#include "worker/cuda/rank_stack.h"
#include "worker/probe/measurement_layout.h"
#include "worker/probe/stage_runner.h"

namespace paratune {
namespace {

// Owns an event array and a small device buffer: RAII for what the measurement adds to the
// rank's stack.
class MeasurementResources {
 public:
  ~MeasurementResources() {
    for (cudaEvent_t event : events) cudaEventDestroy(event);
    if (reduction != nullptr) cudaFree(reduction);
  }
  std::vector<cudaEvent_t> events;
  double* reduction = nullptr;
};

// Enqueues a barrier over every rank and waits for it: an all-reduce on the world, then a
// synchronize (nccl-tests' barrier before its timed loop).
absl::Status Barrier(const RankCommunicators& communicators, double* scratch, cudaStream_t stream) {
  PT_RETURN_IF_ERROR(
      AllReduce(communicators.world(), scratch, scratch, 1, ncclFloat64, ncclSum, stream));
  return CudaStatus(cudaStreamSynchronize(stream), "cudaStreamSynchronize(barrier)");
}

// fp8 training runs on Hopper's fp8 tensor cores: compute capability 9.0 or later (the
// probe's kernels are built for sm_80 and sm_90; ProbeSpec refuses an Ampere cluster.gpu, this
// checks the device itself).
absl::Status CheckFp8Device(int device, const std::string& name) {
  int major = 0;
  int minor = 0;
  PT_RETURN_IF_ERROR(
      CudaStatus(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device),
                 "cudaDeviceGetAttribute(major)"));
  PT_RETURN_IF_ERROR(
      CudaStatus(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device),
                 "cudaDeviceGetAttribute(minor)"));
  if (major < 9) {
    return absl::FailedPreconditionError(absl::StrCat(
        "training.precision (FP8) needs a GPU of compute capability 9.0 or later (Hopper); "
        "device ",
        device, " (", name, ") has ", major, ".", minor));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ProbeMeasurement> RunRank(const ProbeSpec& spec, int64_t local_rank,
                                         const ncclUniqueId& id) {
  const int device = static_cast<int>(spec.gpu_indices()[local_rank]);
  const int64_t rank = spec.first_rank() + local_rank;
  const RankLayout& layout = spec.layout();
  const int64_t stage = layout.CoordinatesOf(rank).pp;
  PT_RETURN_IF_ERROR(
      CudaStatus(cudaSetDevice(device), absl::StrCat("cudaSetDevice(", device, ")")));
  PT_ASSIGN_OR_RETURN(DeviceDescription description, DescribeDevice(device));
  if (spec.training().fp8()) PT_RETURN_IF_ERROR(CheckFp8Device(device, description.gpu_name));

  PT_ASSIGN_OR_RETURN(std::unique_ptr<RankStack> stack, RankStack::Create(spec, rank, id));
  cudaStream_t stream = stack->stream();
  const RankCommunicators& communicators = stack->communicators();
  StageRunner& runner = stack->runner();
  PhaseTimer& timer = stack->timer();
  MeasurementResources resources;

  // The timed steps: timed_steps per series, one series of full steps or one per short-step
  // count.
  const std::vector<int64_t> series = spec.TimedMicroBatches();
  const int64_t per_series = spec.timed_steps();
  const int64_t steps = per_series * static_cast<int64_t>(series.size());
  const int64_t stages = layout.pp();
  PT_ASSIGN_OR_RETURN(const MeasurementLayout measurement_layout,
                      MeasurementLayout::Create(steps, stages));
  const int64_t reduced = measurement_layout.size();
  PT_RETURN_IF_ERROR(CudaStatus(cudaMalloc(&resources.reduction, reduced * sizeof(double)),
                                "cudaMalloc(reduction)"));

  runner.SetMicroBatches(series.front());
  for (int64_t i = 0; i < spec.warmup_steps(); ++i) PT_RETURN_IF_ERROR(runner.Step());
  PT_RETURN_IF_ERROR(Barrier(communicators, resources.reduction, stream));

  // Per series, an event before its first step and one after each step.
  resources.events.resize(steps + series.size(), nullptr);
  for (cudaEvent_t& event : resources.events) {
    PT_RETURN_IF_ERROR(CudaStatus(cudaEventCreate(&event), "cudaEventCreate"));
  }
  for (size_t k = 0; k < series.size(); ++k) {
    runner.SetMicroBatches(series[k]);
    cudaEvent_t* events = &resources.events[k * (per_series + 1)];
    PT_RETURN_IF_ERROR(CudaStatus(cudaEventRecord(events[0], stream), "cudaEventRecord"));
    for (int64_t i = 0; i < per_series; ++i) {
      PT_RETURN_IF_ERROR(runner.Step());
      PT_RETURN_IF_ERROR(CudaStatus(cudaEventRecord(events[i + 1], stream), "cudaEventRecord"));
    }
  }
  PT_RETURN_IF_ERROR(CudaStatus(cudaStreamSynchronize(stream), "cudaStreamSynchronize(steps)"));
  RankMeasurements own;
  own.step_seconds.resize(steps);
  for (size_t k = 0; k < series.size(); ++k) {
    const cudaEvent_t* events = &resources.events[k * (per_series + 1)];
    for (int64_t i = 0; i < per_series; ++i) {
      float milliseconds = 0;
      PT_RETURN_IF_ERROR(CudaStatus(cudaEventElapsedTime(&milliseconds, events[i], events[i + 1]),
                                    "cudaEventElapsedTime"));
      own.step_seconds[k * per_series + i] = milliseconds / 1e3;
    }
  }

  // The instrumented step runs the last series' micro-batches.
  timer.Start();
  PT_RETURN_IF_ERROR(runner.Step());
  PT_RETURN_IF_ERROR(timer.Stop());
  PT_RETURN_IF_ERROR(CudaStatus(cudaStreamSynchronize(stream), "cudaStreamSynchronize(phases)"));
  PT_ASSIGN_OR_RETURN(own.phase_seconds, timer.Seconds());

  PT_ASSIGN_OR_RETURN(std::vector<CollectiveMeasurement> collectives,
                      BenchmarkCollectives(communicators, stack->plan(), stack->memory(),
                                           !DataParallelModelled(spec),
                                           ShardsOptimizerStates(spec.config().dp_sharding()),
                                           spec.training().fp32_gradients(), stream));
  for (const CollectiveMeasurement& collective : collectives) {
    own.collective_seconds.push_back(collective.seconds);
  }
  PT_ASSIGN_OR_RETURN(const int64_t in_use, DeviceMemoryInUse());
  own.stage_peak_bytes.assign(stages, 0.0);
  own.stage_peak_bytes[stage] = static_cast<double>(in_use);

  // Every rank's values reduced in one all-reduce (maximum).
  PT_ASSIGN_OR_RETURN(std::vector<double> values, measurement_layout.Pack(own));
  PT_RETURN_IF_ERROR(
      CudaStatus(cudaMemcpyAsync(resources.reduction, values.data(), reduced * sizeof(double),
                                 cudaMemcpyHostToDevice, stream),
                 "cudaMemcpyAsync(measurements)"));
  PT_RETURN_IF_ERROR(AllReduce(communicators.world(), resources.reduction, resources.reduction,
                               reduced, ncclFloat64, ncclMax, stream));
  PT_RETURN_IF_ERROR(
      CudaStatus(cudaMemcpyAsync(values.data(), resources.reduction, reduced * sizeof(double),
                                 cudaMemcpyDeviceToHost, stream),
                 "cudaMemcpyAsync(reduced measurements)"));
  PT_RETURN_IF_ERROR(CudaStatus(cudaStreamSynchronize(stream), "cudaStreamSynchronize(reduce)"));
  PT_ASSIGN_OR_RETURN(const RankMeasurements slowest, measurement_layout.Unpack(values));

  ProbeMeasurement measurement;
  measurement.step_seconds = slowest.step_seconds;
  measurement.phase_seconds = slowest.phase_seconds;
  for (size_t i = 0; i < collectives.size(); ++i) {
    collectives[i].seconds = slowest.collective_seconds[i];
  }
  measurement.collectives = std::move(collectives);
  const auto busiest =
      std::max_element(slowest.stage_peak_bytes.begin(), slowest.stage_peak_bytes.end());
  measurement.peak_memory_bytes = static_cast<int64_t>(*busiest);
  measurement.peak_memory_stage = busiest - slowest.stage_peak_bytes.begin();
  measurement.device = std::move(description);
  measurement.attention_kernel = stack->ops().attention().forward_kernel();
  measurement.attention_fallback_reason = stack->ops().attention().fallback_reason();
  measurement.attention_backward_kernel = stack->ops().attention().backward_kernel();
  measurement.attention_backward_fallback_reason =
      stack->ops().attention().backward_fallback_reason();
  return measurement;
}

}  // namespace paratune
