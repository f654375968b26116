#include "worker/cuda/weight_gathers.h"

#include <cuda_bf16.h>

#include "common/status_macros.h"
#include "worker/cuda/communicators.h"
#include "worker/cuda/cuda_status.h"
#include "worker/cuda/ordering_event.h"

namespace paratune {

absl::StatusOr<std::unique_ptr<WeightGathers>> WeightGathers::Create(
    const WeightGatherBuffers& buffers, PhaseTimer* timer) {
  std::unique_ptr<WeightGathers> gathers(new WeightGathers(buffers, timer));
  PT_RETURN_IF_ERROR(NewOrderingEvent("weight gathers", &gathers->dispatch_));
  for (cudaEvent_t& event : gathers->gathered_)
    PT_RETURN_IF_ERROR(NewOrderingEvent("weight gathers", &event));
  return gathers;
}

WeightGathers::~WeightGathers() {
  for (cudaEvent_t event : gathered_) {
    if (event != nullptr) cudaEventDestroy(event);
  }
  if (dispatch_ != nullptr) cudaEventDestroy(dispatch_);
}

absl::Status WeightGathers::Dispatch(const ParameterBucket& bucket, const OptimizerShard& shard,
                                     int64_t slot) {
  constexpr int64_t kBf16 = sizeof(__nv_bfloat16);
  const char* own = buffers_.shards + shard.state * kBf16;
  char* gathered = buffers_.slots + slot * buffers_.slot_bytes;
  if (buffers_.group.comm == nullptr) {
    PT_RETURN_IF_ERROR(timer_->Mark(ProbePhase::kElementwise));
    return CudaStatus(
        cudaMemcpyAsync(gathered + (shard.first - bucket.start) * kBf16, own, shard.count * kBf16,
                        cudaMemcpyDeviceToDevice, buffers_.compute),
        "cudaMemcpyAsync(weight shard to its slot)");
  }
  // The slot's last reader ran on the compute stream before this dispatch.
  PT_RETURN_IF_ERROR(CudaStatus(cudaEventRecord(dispatch_, buffers_.compute),
                                "cudaEventRecord(weight gather dispatch)"));
  PT_RETURN_IF_ERROR(CudaStatus(cudaStreamWaitEvent(buffers_.communication, dispatch_, 0),
                                "cudaStreamWaitEvent(communication stream)"));
  // Rank r's shard lands at r x count, where OptimizerShardOf puts its first element.
  PT_RETURN_IF_ERROR(AllGather(buffers_.group.comm, own, gathered, shard.count, ncclBfloat16,
                               buffers_.communication));
  return CudaStatus(cudaEventRecord(gathered_[slot], buffers_.communication),
                    "cudaEventRecord(weights gathered)");
}

absl::Status WeightGathers::Wait(int64_t slot) {
  if (buffers_.group.comm == nullptr) return absl::OkStatus();
  PT_RETURN_IF_ERROR(timer_->Mark(ProbePhase::kDpCollectives));
  return CudaStatus(cudaStreamWaitEvent(buffers_.compute, gathered_[slot], 0),
                    "cudaStreamWaitEvent(weights gathered)");
}

}  // namespace paratune
