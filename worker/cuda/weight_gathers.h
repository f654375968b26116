// Runs a sharded replica's weight gathers (dp_sharding full; worker/probe/weight_gather_plan.h)
// on a communication stream: each unit's bf16 weights all-gathered from the data x context
// group's shards into a gathered-weight slot once the compute stream has finished with what
// the slot held, and the compute stream's wait for it, ordered with events as FSDP2 orders its
// all_gather_stream against the default stream (torch/distributed/fsdp/_fully_shard/
// _fsdp_param_group.py, FSDPParamGroup.unshard and wait_for_unshard).
//
// Phase times: the compute stream's PhaseTimer sees only its waits for a gather
// (`dp_collectives`), the exposed part; a gather running behind computation is in no phase.
#ifndef PARATUNE_WORKER_CUDA_WEIGHT_GATHERS_H_
#define PARATUNE_WORKER_CUDA_WEIGHT_GATHERS_H_

#include <cuda_runtime_api.h>

#include <array>
#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "worker/cuda/data_parallel_sync.h"
#include "worker/cuda/phase_timer.h"
#include "worker/probe/overlap_plan.h"
#include "worker/probe/weight_gather_plan.h"

namespace paratune {

// The buffers and streams the gathers run over; all borrowed, outliving the gathers. `group`
// is the group the weights are sharded over (the data x context group, or its shard group
// under hybrid sharding: the gathers never cross replicas), or a null comm where the probe
// models it (a REPLICA probe).
struct WeightGatherBuffers {
  DataParallelGroup group;
  // The rank's bf16 shard of the weights, in the optimizer states' layout
  // (OptimizerShard::state), and the kGatheredWeightSlots slots of slot_bytes each.
  char* shards = nullptr;
  char* slots = nullptr;
  int64_t slot_bytes = 0;
  cudaStream_t compute = nullptr;
  cudaStream_t communication = nullptr;
};

// Not thread-safe: one per rank, on that rank's thread and device.
class WeightGathers {
 public:
  // Creates the events. INTERNAL for a CUDA failure.
  static absl::StatusOr<std::unique_ptr<WeightGathers>> Create(const WeightGatherBuffers& buffers,
                                                               PhaseTimer* timer);
  WeightGathers(const WeightGathers&) = delete;
  WeightGathers& operator=(const WeightGathers&) = delete;
  ~WeightGathers();

  // Enqueues `bucket`'s weights, of which the rank holds `shard`, into slot `slot`: on the
  // communication stream after the compute stream's work so far, all-gathered over the group;
  // without a communicator, the rank's shard copied to its place in the slot on the compute
  // stream (the rest of the slot keeps what it held: stand-ins for the other ranks' shards).
  // NcclStatus's or CudaStatus's error.
  absl::Status Dispatch(const ParameterBucket& bucket, const OptimizerShard& shard, int64_t slot);
  // The compute stream waits for slot `slot`'s last gather (nothing without a communicator).
  absl::Status Wait(int64_t slot);

 private:
  WeightGathers(const WeightGatherBuffers& buffers, PhaseTimer* timer)
      : buffers_(buffers), timer_(timer) {}

  const WeightGatherBuffers buffers_;
  PhaseTimer* timer_;
  cudaEvent_t dispatch_ = nullptr;                            // compute -> communication
  std::array<cudaEvent_t, kGatheredWeightSlots> gathered_{};  // communication -> compute
};

}  // namespace paratune

#endif  // PARATUNE_WORKER_CUDA_WEIGHT_GATHERS_H_
