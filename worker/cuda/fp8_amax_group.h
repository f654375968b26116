// The communicator over which fp8 amaxes are reduced: Megatron-LM's amax reduction group,
// every tensor-, context- and data-parallel rank of one pipeline stage
// (parallel_state.get_amax_reduction_group(with_context_parallel=True), the fp8_group that
// megatron/core/fp8_utils.py hands to fp8_autocast). Transformer Engine all-reduces the amaxes
// over it (maximum) before each scale update, so every rank of a stage casts with the same
// scales. A communicator of its own, as in Megatron-LM: sharing the data x context group's
// would queue these small reductions behind the overlapped gradient reduce-scatters
// (NCCL serializes the operations of one communicator).
#ifndef PARATUNE_WORKER_CUDA_FP8_AMAX_GROUP_H_
#define PARATUNE_WORKER_CUDA_FP8_AMAX_GROUP_H_

#include <nccl.h>

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "worker/cuda/communicators.h"

namespace paratune {

// Not thread-safe: one per rank.
class Fp8AmaxGroup {
 public:
  // Splits the group from the world (ncclCommSplit: every rank of the world must call it, in
  // the same order as its other splits). A stage of one rank gets no communicator. INTERNAL
  // or UNAVAILABLE as NcclStatus.
  static absl::StatusOr<std::unique_ptr<Fp8AmaxGroup>> Create(
      const RankCommunicators& communicators);
  Fp8AmaxGroup(const Fp8AmaxGroup&) = delete;
  Fp8AmaxGroup& operator=(const Fp8AmaxGroup&) = delete;
  ~Fp8AmaxGroup();

  // nullptr when the stage has one rank.
  ncclComm_t comm() const { return comm_; }
  // tensor x context x data parallel ranks of the probe's stage (dp = 1 in a REPLICA probe).
  int64_t size() const { return size_; }

 private:
  Fp8AmaxGroup(ncclComm_t comm, int64_t size) : comm_(comm), size_(size) {}

  ncclComm_t comm_;
  int64_t size_;
};

}  // namespace paratune

#endif  // PARATUNE_WORKER_CUDA_FP8_AMAX_GROUP_H_
