#include "worker/cuda/collective_benchmark.h"

#include <functional>
#include <vector>

#include "common/status_macros.h"
#include "worker/cuda/cuda_status.h"
#include "worker/cuda/nccl_element_type.h"
#include "worker/probe/context_parallel_ring.h"

namespace paratune {
namespace {

// Seconds per call of `operation` on `stream`, nccl-tests style.
absl::StatusOr<double> TimeOperation(const std::function<absl::Status()>& operation,
                                     cudaStream_t stream) {
  for (int i = 0; i < kBenchmarkWarmupIterations; ++i) PT_RETURN_IF_ERROR(operation());
  cudaEvent_t start;
  cudaEvent_t stop;
  PT_RETURN_IF_ERROR(CudaStatus(cudaEventCreate(&start), "cudaEventCreate"));
  absl::Status status = CudaStatus(cudaEventCreate(&stop), "cudaEventCreate");
  if (!status.ok()) {
    cudaEventDestroy(start);
    return status;
  }
  float milliseconds = 0;
  status = CudaStatus(cudaEventRecord(start, stream), "cudaEventRecord");
  for (int i = 0; status.ok() && i < kBenchmarkTimedIterations; ++i) status = operation();
  if (status.ok()) status = CudaStatus(cudaEventRecord(stop, stream), "cudaEventRecord");
  if (status.ok()) status = CudaStatus(cudaEventSynchronize(stop), "cudaEventSynchronize");
  if (status.ok()) {
    status = CudaStatus(cudaEventElapsedTime(&milliseconds, start, stop), "cudaEventElapsedTime");
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  PT_RETURN_IF_ERROR(status);
  return milliseconds / 1e3 / kBenchmarkTimedIterations;
}

}  // namespace

absl::StatusOr<std::vector<CollectiveMeasurement>> BenchmarkCollectives(
    const RankCommunicators& communicators, const FootprintPlan& plan,
    const DeviceFootprint& memory, bool data_parallel, bool distributed_optimizer,
    bool fp32_gradients, cudaStream_t stream) {
  const ShardShapes& x = plan.shapes();
  std::vector<CollectiveMeasurement> measurements;
  auto measure = [&](RankGroup group, CollectiveOperation operation, int64_t bytes,
                     const std::function<absl::Status()>& call) -> absl::Status {
    PT_ASSIGN_OR_RETURN(const double seconds, TimeOperation(call, stream));
    measurements.push_back({group, operation, communicators.group_size(group), bytes, seconds});
    return absl::OkStatus();
  };

  if (communicators.group_size(RankGroup::kTensor) > 1) {
    ncclComm_t comm = communicators.group(RankGroup::kTensor);
    const int64_t bytes = TensorParallelActivationBytes(x);
    if (x.sequence_parallel) {
      const auto* send = memory.get<__nv_bfloat16>(ProbeBuffer::kReduced);
      auto* receive = memory.get<__nv_bfloat16>(ProbeBuffer::kGathered);
      PT_RETURN_IF_ERROR(measure(RankGroup::kTensor, CollectiveOperation::kAllGather, bytes, [&] {
        return AllGather(comm, send, receive, x.residual_tokens * x.hidden, ncclBfloat16, stream);
      }));
    } else {
      auto* buffer = memory.get<__nv_bfloat16>(ProbeBuffer::kProjectionOutput);
      PT_RETURN_IF_ERROR(measure(RankGroup::kTensor, CollectiveOperation::kAllReduce, bytes, [&] {
        return AllReduce(comm, buffer, buffer, x.tokens * x.hidden, ncclBfloat16, ncclSum, stream);
      }));
    }
  }
  if (communicators.group_size(RankGroup::kContext) > 1) {
    ncclComm_t comm = communicators.group(RankGroup::kContext);
    const int64_t count = 2 * x.tokens * x.kv_heads * x.head_dim;
    auto* gathered = memory.get<__nv_bfloat16>(ProbeBuffer::kKeyValueGathered);
    if (plan.context_parallel_ring()) {
      // One ring step: a K/V block to the next rank while the previous rank's comes in (into
      // the gradient slots: the ring holds one received block when c = 2).
      const int64_t c = communicators.group_size(RankGroup::kContext);
      const int64_t rank = communicators.group_rank(RankGroup::kContext);
      std::vector<PeerTransfer> ring(2);
      ring[0] = {true, static_cast<int>(RingNext(c, rank)), gathered, count};
      ring[1] = {false, static_cast<int>(RingPrevious(c, rank)),
                 memory.get<void>(ProbeBuffer::kKeyValueGradients), count};
      PT_RETURN_IF_ERROR(measure(RankGroup::kContext, CollectiveOperation::kSendRecv, count * 2,
                                 [&] { return SendReceive(comm, ring, ncclBfloat16, stream); }));
    } else {
      const auto* own = gathered + communicators.group_rank(RankGroup::kContext) * count;
      PT_RETURN_IF_ERROR(
          measure(RankGroup::kContext, CollectiveOperation::kAllGather, ContextParallelKvBytes(x),
                  [&] { return AllGather(comm, own, gathered, count, ncclBfloat16, stream); }));
    }
  }
  if (data_parallel && communicators.group_size(RankGroup::kDataContext) > 1) {
    ncclComm_t comm = communicators.group(RankGroup::kDataContext);
    const ParameterLayout& parameters = plan.parameters();
    const ElementType gradient = GradientElementType(fp32_gradients);
    const ncclDataType_t type = NcclTypeOf(gradient);
    const int64_t element = BytesOf(gradient);
    char* gradients = memory.get<char>(ProbeBuffer::kGradients);
    // The dense partition, which the data x context group reduces (an MoE model's experts
    // are the expert data-parallel group's); under sharded gradients the largest unit, staged
    // (the step reduce-scatters unit by unit).
    const ParameterPartition& dense = parameters.dense;
    const int64_t staged_bytes = plan.placement(ProbeBuffer::kGradientStaging).bytes;
    const int64_t bytes = plan.sharded_gradients() ? staged_bytes : dense.end * element;
    if (plan.sharded_gradients()) {
      char* staged = memory.get<char>(ProbeBuffer::kGradientStaging);
      const int64_t count = staged_bytes / element / dense.shard_count;
      char* own = staged + communicators.group_rank(RankGroup::kDataContext) * count * element;
      PT_RETURN_IF_ERROR(
          measure(RankGroup::kDataContext, CollectiveOperation::kReduceScatter, bytes,
                  [&] { return ReduceScatter(comm, staged, own, count, type, stream); }));
    } else if (distributed_optimizer) {
      char* own = gradients + communicators.group_rank(RankGroup::kDataContext) *
                                  dense.shard_elements * element;
      PT_RETURN_IF_ERROR(measure(
          RankGroup::kDataContext, CollectiveOperation::kReduceScatter, bytes,
          [&] { return ReduceScatter(comm, gradients, own, dense.shard_elements, type, stream); }));
    } else {
      PT_RETURN_IF_ERROR(measure(
          RankGroup::kDataContext, CollectiveOperation::kAllReduce, bytes,
          [&] { return AllReduce(comm, gradients, gradients, dense.end, type, ncclSum, stream); }));
    }
  }
  if (communicators.group_size(RankGroup::kPipeline) > 1) {
    ncclComm_t comm = communicators.group(RankGroup::kPipeline);
    const int64_t stages = communicators.group_size(RankGroup::kPipeline);
    const int64_t stage = communicators.group_rank(RankGroup::kPipeline);
    const int64_t bytes = PipelineBoundaryBytes(x);
    std::vector<PeerTransfer> ring(2);
    ring[0] = {true, static_cast<int>((stage + 1) % stages),
               memory.get<void>(ProbeBuffer::kPipelineSendActivation), bytes / 2};
    ring[1] = {false, static_cast<int>((stage + stages - 1) % stages),
               memory.get<void>(ProbeBuffer::kPipelineReceiveGradient), bytes / 2};
    PT_RETURN_IF_ERROR(measure(RankGroup::kPipeline, CollectiveOperation::kSendRecv, bytes,
                               [&] { return SendReceive(comm, ring, ncclBfloat16, stream); }));
  }
  return measurements;
}

}  // namespace paratune
