// Runs a DataParallelPlan's steps (worker/probe/overlap_plan.h) on two CUDA streams: the data
// x context group's gradient reduce-scatters (all-reduces without the distributed optimizer)
// and parameter all-gathers go on a communication stream, ordered against the compute stream
// with events, as Megatron-LM's --overlap-grad-reduce and --overlap-param-gather run them on
// NCCL's own stream.
//
// Phase times: the compute stream's PhaseTimer sees only the time the compute stream waits
// for a collective (the exposed communication, `dp_collectives`); the time a collective runs
// behind computation is in no phase. The collective benchmark (collective_benchmark.h)
// measures the collectives themselves.
#ifndef PARATUNE_WORKER_CUDA_DATA_PARALLEL_SYNC_H_
#define PARATUNE_WORKER_CUDA_DATA_PARALLEL_SYNC_H_

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "worker/cuda/phase_timer.h"
#include "worker/probe/overlap_plan.h"
#include "worker/probe/parameter_layout.h"

namespace paratune {

// A group the buckets are reduced over (a group of one rank is legal), and this rank in it:
// the group a partition is sharded over and, under hybrid sharding, the group of its shard's
// replicas (RankGroup::kDataReplica; null without).
struct DataParallelGroup {
  ncclComm_t comm = nullptr;
  int64_t rank = 0;
  ncclComm_t replicas = nullptr;
};

// Enqueues on `stream` the reduce-scatter of `count` elements per rank of `type` from `send`
// over `group` into `shard` (in place where `shard` is the rank's part of `send`) and, where
// group.replicas is set, the all-reduce of `shard` over the replicas, as Megatron-LM's
// _ParamAndGradBucketGroup.start_grad_sync does with distributed optimizer instances
// (param_and_grad_buffer.py, core_v0.19.0: the reduce-scatter in the instance, then
// all_reduce of the local shard over inter_distributed_optimizer_instance_group) and FSDP2's
// HSDP after its reduce-scatter. NcclStatus's error.
absl::Status ReduceScatterShard(const DataParallelGroup& group, const void* send, void* shard,
                                int64_t count, ncclDataType_t type, cudaStream_t stream);

// The buffers and streams the collectives run over; all borrowed, outliving the sync. Shards
// per bucket are its partition's (ParameterLayout::PartitionOf): the group's size with the
// distributed optimizer, which reduce-scatters and all-gathers; 1 without, which all-reduces
// and gathers nothing.
struct DataParallelBuffers {
  // Each bucket's group (ParameterBucket::group): the data x context group (its shard group
  // and replicas under hybrid sharding), and for a mixture-of-experts model the expert
  // data-parallel group.
  DataParallelGroup data_context;
  DataParallelGroup expert_data;
  const DataParallelGroup& GroupOf(const ParameterBucket& bucket) const {
    return bucket.group == RankGroup::kExpertData ? expert_data : data_context;
  }
  // The weights in `parameters`' bytes (ParameterLayout::WeightByte).
  const ParameterLayout* parameters = nullptr;
  char* weights = nullptr;
  void* gradients = nullptr;  // fp32, or bf16 when !fp32_gradients
  bool fp32_gradients = true;
  cudaStream_t compute = nullptr;
  cudaStream_t communication = nullptr;
};

// Enqueues on `stream` the all-gather of `bucket`'s parameters over `group` (its group) from
// the shards of its partition's ranks, in the bytes of its region's weight dtype: one byte per
// element in an fp8 region, as Megatron-LM gathers a uint8 buffer of Float8Tensor data. The
// bucket lies within one region (ParameterLayout::regions). NcclStatus's error.
absl::Status AllGatherParameters(const DataParallelGroup& group, const ParameterLayout& parameters,
                                 const ParameterBucket& bucket, char* weights, cudaStream_t stream);

// Not thread-safe: one per rank, on that rank's thread and device.
class DataParallelSync {
 public:
  // Creates the events for `buckets` (ParameterBucket ranges of the buffers). INTERNAL for a
  // CUDA failure.
  static absl::StatusOr<std::unique_ptr<DataParallelSync>> Create(
      const DataParallelBuffers& buffers, std::vector<ParameterBucket> buckets, PhaseTimer* timer);
  DataParallelSync(const DataParallelSync&) = delete;
  DataParallelSync& operator=(const DataParallelSync&) = delete;
  ~DataParallelSync();

  // Enqueues one step of the plan (its bucket an index into the buckets given to Create):
  // kDispatchGather and kDispatchReduce on the communication stream, after the compute
  // stream's work so far; kWaitGather and kWaitReductions as waits of the compute stream,
  // marked dp_collectives. The caller issues the plan's steps in its order, each at its point
  // (worker/probe/stage_runner.h matches them): a wait covers only what was dispatched before it.
  // NcclStatus's or CudaStatus's error.
  absl::Status Issue(const PlanStep& step);

 private:
  DataParallelSync(const DataParallelBuffers& buffers, std::vector<ParameterBucket> buckets,
                   PhaseTimer* timer)
      : buffers_(buffers), buckets_(std::move(buckets)), timer_(timer) {}

  // Makes the communication stream wait for the work given to the compute stream so far.
  absl::Status FollowCompute();
  void* Gradient(int64_t element) const;

  const DataParallelBuffers buffers_;
  const std::vector<ParameterBucket> buckets_;
  PhaseTimer* timer_;
  cudaEvent_t dispatch_ = nullptr;     // compute -> communication
  cudaEvent_t reductions_ = nullptr;   // communication -> compute, after the reductions
  std::vector<cudaEvent_t> gathered_;  // per bucket, communication -> compute
};

}  // namespace paratune

#endif  // PARATUNE_WORKER_CUDA_DATA_PARALLEL_SYNC_H_
