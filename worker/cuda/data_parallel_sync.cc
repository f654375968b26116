#include "worker/cuda/data_parallel_sync.h"

#include <utility>

#include "common/status_macros.h"
#include "worker/cuda/communicators.h"
#include "worker/cuda/cuda_status.h"
#include "worker/cuda/nccl_element_type.h"
#include "worker/cuda/ordering_event.h"

namespace paratune {

absl::Status AllGatherParameters(const DataParallelGroup& group, const ParameterLayout& parameters,
                                 const ParameterBucket& bucket, char* weights,
                                 cudaStream_t stream) {
  const OptimizerShard shard =
      OptimizerShardOf(bucket, parameters.PartitionOf(bucket.start), group.rank);
  // In place: this rank's shard is where the gathered bucket holds it.
  return AllGather(group.comm, weights + parameters.WeightByte(shard.first),
                   weights + parameters.WeightByte(bucket.start),
                   shard.count * parameters.RegionOf(bucket.start).bytes_per_element, ncclUint8,
                   stream);
}

absl::Status ReduceScatterShard(const DataParallelGroup& group, const void* send, void* shard,
                                int64_t count, ncclDataType_t type, cudaStream_t stream) {
  PT_RETURN_IF_ERROR(ReduceScatter(group.comm, send, shard, count, type, stream));
  if (group.replicas == nullptr) return absl::OkStatus();
  return AllReduce(group.replicas, shard, shard, count, type, ncclSum, stream);
}

absl::StatusOr<std::unique_ptr<DataParallelSync>> DataParallelSync::Create(
    const DataParallelBuffers& buffers, std::vector<ParameterBucket> buckets, PhaseTimer* timer) {
  std::unique_ptr<DataParallelSync> sync(new DataParallelSync(buffers, std::move(buckets), timer));
  PT_RETURN_IF_ERROR(NewOrderingEvent("data-parallel buckets", &sync->dispatch_));
  PT_RETURN_IF_ERROR(NewOrderingEvent("data-parallel buckets", &sync->reductions_));
  sync->gathered_.resize(sync->buckets_.size(), nullptr);
  for (cudaEvent_t& event : sync->gathered_)
    PT_RETURN_IF_ERROR(NewOrderingEvent("data-parallel buckets", &event));
  return sync;
}

DataParallelSync::~DataParallelSync() {
  for (cudaEvent_t event : gathered_) {
    if (event != nullptr) cudaEventDestroy(event);
  }
  if (reductions_ != nullptr) cudaEventDestroy(reductions_);
  if (dispatch_ != nullptr) cudaEventDestroy(dispatch_);
}

void* DataParallelSync::Gradient(int64_t element) const {
  return static_cast<char*>(buffers_.gradients) +
         element * BytesOf(GradientElementType(buffers_.fp32_gradients));
}

absl::Status DataParallelSync::FollowCompute() {
  // Recording again is safe: a wait uses the event's state when it is enqueued.
  PT_RETURN_IF_ERROR(CudaStatus(cudaEventRecord(dispatch_, buffers_.compute),
                                "cudaEventRecord(data-parallel dispatch)"));
  return CudaStatus(cudaStreamWaitEvent(buffers_.communication, dispatch_, 0),
                    "cudaStreamWaitEvent(communication stream)");
}

absl::Status DataParallelSync::Issue(const PlanStep& step) {
  const ParameterBucket& bucket = buckets_[step.bucket];
  switch (step.operation) {
    case PlanOperation::kDispatchGather:
      PT_RETURN_IF_ERROR(FollowCompute());
      PT_RETURN_IF_ERROR(AllGatherParameters(buffers_.GroupOf(bucket), *buffers_.parameters, bucket,
                                             buffers_.weights, buffers_.communication));
      return CudaStatus(cudaEventRecord(gathered_[step.bucket], buffers_.communication),
                        "cudaEventRecord(parameters gathered)");
    case PlanOperation::kWaitGather:
      PT_RETURN_IF_ERROR(timer_->Mark(ProbePhase::kDpCollectives));
      return CudaStatus(cudaStreamWaitEvent(buffers_.compute, gathered_[step.bucket], 0),
                        "cudaStreamWaitEvent(parameters gathered)");
    case PlanOperation::kDispatchReduce: {
      PT_RETURN_IF_ERROR(FollowCompute());
      const ncclDataType_t type = NcclTypeOf(GradientElementType(buffers_.fp32_gradients));
      const DataParallelGroup& group = buffers_.GroupOf(bucket);
      const ParameterPartition& partition = buffers_.parameters->PartitionOf(bucket.start);
      if (partition.shard_count == 1) {
        return AllReduce(group.comm, Gradient(bucket.start), Gradient(bucket.start),
                         bucket.end - bucket.start, type, ncclSum, buffers_.communication);
      }
      // In place: this rank's shard of the summed bucket lands where its own shard is.
      const OptimizerShard shard = OptimizerShardOf(bucket, partition, group.rank);
      return ReduceScatterShard(group, Gradient(bucket.start), Gradient(shard.first), shard.count,
                                type, buffers_.communication);
    }
    case PlanOperation::kWaitReductions:
      PT_RETURN_IF_ERROR(CudaStatus(cudaEventRecord(reductions_, buffers_.communication),
                                    "cudaEventRecord(gradients reduced)"));
      PT_RETURN_IF_ERROR(timer_->Mark(ProbePhase::kDpCollectives));
      return CudaStatus(cudaStreamWaitEvent(buffers_.compute, reductions_, 0),
                        "cudaStreamWaitEvent(gradients reduced)");
  }
  return absl::InternalError("unknown data-parallel plan operation");
}

}  // namespace paratune
