// One rank's NCCL communicators: the probe's world, and the tensor, context, data x context
// and pipeline groups split from it (ncclCommSplit) as rank_layout.h places them (under
// hybrid sharding the data x context group's shard and replica groups too), with a
// mixture-of-experts model the expert tensor, expert and expert data groups too, and the
// collectives the training step runs on them.
#ifndef PARATUNE_WORKER_CUDA_COMMUNICATORS_H_
#define PARATUNE_WORKER_CUDA_COMMUNICATORS_H_

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "worker/probe/rank_layout.h"

namespace paratune {

// Not thread-safe: one per rank, used by that rank's thread.
class RankCommunicators {
 public:
  // Joins the world communicator of layout.world_size() ranks that `id` names as `rank`, on
  // the current device, then splits the groups (groups of one rank, and the expert groups of
  // a dense model, get no communicator). Blocks until every rank of the world has joined; every
  // rank must call it.
  static absl::StatusOr<std::unique_ptr<RankCommunicators>> Create(const ncclUniqueId& id,
                                                                   const RankLayout& layout,
                                                                   int64_t rank);
  RankCommunicators(const RankCommunicators&) = delete;
  RankCommunicators& operator=(const RankCommunicators&) = delete;
  // Destroys the communicators (ncclCommDestroy waits for their pending work).
  ~RankCommunicators();

  ncclComm_t world() const { return world_; }
  // The group's communicator; nullptr when the group has one rank, is an expert group of a
  // dense model or is the shard group without hybrid sharding (use layout().DataShardGroup()).
  ncclComm_t group(RankGroup group) const { return groups_[static_cast<int>(group)]; }
  int64_t group_size(RankGroup group) const { return layout_.GroupSize(group); }
  int64_t group_rank(RankGroup group) const { return layout_.GroupRank(group, rank_); }
  int64_t rank() const { return rank_; }
  const RankLayout& layout() const { return layout_; }

 private:
  RankCommunicators(const RankLayout& layout, int64_t rank) : layout_(layout), rank_(rank) {}

  RankLayout layout_;
  int64_t rank_;
  ncclComm_t world_ = nullptr;
  std::array<ncclComm_t, 9> groups_{};  // one per RankGroup
};

// A new unique id for a world's rank 0 to hand to the others. The process that calls this
// hosts NCCL's bootstrap root and must outlive the world's initialization.
absl::StatusOr<ncclUniqueId> NewNcclUniqueId();

// The collectives, enqueued on `stream`; counts are elements per rank (the send buffer of an
// all-gather, the receive buffer of a reduce-scatter, the buffer of an all-reduce). Each
// returns NcclStatus's error.
absl::Status AllGather(ncclComm_t comm, const void* send, void* receive, int64_t count,
                       ncclDataType_t type, cudaStream_t stream);
absl::Status ReduceScatter(ncclComm_t comm, const void* send, void* receive, int64_t count,
                           ncclDataType_t type, cudaStream_t stream);
absl::Status AllReduce(ncclComm_t comm, const void* send, void* receive, int64_t count,
                       ncclDataType_t type, ncclRedOp_t op, cudaStream_t stream);

// Point-to-point transfers posted together in one NCCL group (ncclGroupStart/End).
struct PeerTransfer {
  bool send = true;
  int peer = 0;  // rank in `comm`
  void* buffer = nullptr;
  int64_t count = 0;
};
absl::Status SendReceive(ncclComm_t comm, const std::vector<PeerTransfer>& transfers,
                         ncclDataType_t type, cudaStream_t stream);

// The all-to-all of `count` elements between every two of the `ranks` ranks of `comm`: block q
// of this rank's `send` goes to rank q, rank q's block for this rank lands in block q of
// `receive` (this rank's own block is copied too). Posted as one group of ncclSend/ncclRecv
// pairs, as torch.distributed.all_to_all_single runs on NCCL, which Megatron-LM's all-to-all
// dispatcher calls for its dispatch and combine over the expert group (token_dispatcher.py,
// MoEAlltoAllTokenDispatcher.token_dispatch and token_combine). `type` is ncclBfloat16 or
// ncclFloat32; INVALID_ARGUMENT for another.
absl::Status AllToAll(ncclComm_t comm, int64_t ranks, const void* send, void* receive,
                      int64_t count, ncclDataType_t type, cudaStream_t stream);

}  // namespace paratune

#endif  // PARATUNE_WORKER_CUDA_COMMUNICATORS_H_
