#include "worker/cuda/communicators.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "worker/cuda/cuda_status.h"

namespace paratune {
namespace {

constexpr RankGroup kGroups[] = {
    RankGroup::kTensor,       RankGroup::kContext,     RankGroup::kDataContext,
    RankGroup::kDataShard,    RankGroup::kDataReplica, RankGroup::kPipeline,
    RankGroup::kExpertTensor, RankGroup::kExpert,      RankGroup::kExpertData};

bool IsExpertGroup(RankGroup group) {
  return group == RankGroup::kExpertTensor || group == RankGroup::kExpert ||
         group == RankGroup::kExpertData;
}

}  // namespace

absl::StatusOr<ncclUniqueId> NewNcclUniqueId() {
  ncclUniqueId id;
  PT_RETURN_IF_ERROR(NcclStatus(ncclGetUniqueId(&id), "ncclGetUniqueId"));
  return id;
}

absl::StatusOr<std::unique_ptr<RankCommunicators>> RankCommunicators::Create(
    const ncclUniqueId& id, const RankLayout& layout, int64_t rank) {
  std::unique_ptr<RankCommunicators> communicators(new RankCommunicators(layout, rank));
  PT_RETURN_IF_ERROR(
      NcclStatus(ncclCommInitRank(&communicators->world_, static_cast<int>(layout.world_size()), id,
                                  static_cast<int>(rank)),
                 absl::StrCat("ncclCommInitRank (rank ", rank, " of ", layout.world_size(), ")")));
  // Every rank splits every group in the same order, as ncclCommSplit (collective over the
  // world) requires; a group of one rank is the same size everywhere, so all skip it, and so
  // are the expert groups of a dense model, which no layer uses, and the shard group without
  // hybrid sharding, which is the data x context group itself (RankLayout::DataShardGroup).
  for (RankGroup group : kGroups) {
    if (layout.GroupSize(group) == 1) continue;
    if (IsExpertGroup(group) && !layout.has_experts()) continue;
    if (group == RankGroup::kDataShard && !layout.hybrid()) continue;
    ncclComm_t& split = communicators->groups_[static_cast<int>(group)];
    PT_RETURN_IF_ERROR(NcclStatus(
        ncclCommSplit(communicators->world_, static_cast<int>(layout.GroupColor(group, rank)),
                      static_cast<int>(layout.GroupRank(group, rank)), &split, nullptr),
        absl::StrCat("ncclCommSplit (", RankGroupName(group), " group)"), communicators->world_));
  }
  return communicators;
}

RankCommunicators::~RankCommunicators() {
  for (ncclComm_t comm : groups_) {
    if (comm != nullptr) ncclCommDestroy(comm);
  }
  if (world_ != nullptr) ncclCommDestroy(world_);
}

absl::Status AllGather(ncclComm_t comm, const void* send, void* receive, int64_t count,
                       ncclDataType_t type, cudaStream_t stream) {
  const ncclResult_t result =
      ncclAllGather(send, receive, static_cast<size_t>(count), type, comm, stream);
  if (result != ncclSuccess) return NcclStatus(result, "ncclAllGather", comm);
  return absl::OkStatus();
}

absl::Status ReduceScatter(ncclComm_t comm, const void* send, void* receive, int64_t count,
                           ncclDataType_t type, cudaStream_t stream) {
  const ncclResult_t result =
      ncclReduceScatter(send, receive, static_cast<size_t>(count), type, ncclSum, comm, stream);
  if (result != ncclSuccess) return NcclStatus(result, "ncclReduceScatter", comm);
  return absl::OkStatus();
}

absl::Status AllReduce(ncclComm_t comm, const void* send, void* receive, int64_t count,
                       ncclDataType_t type, ncclRedOp_t op, cudaStream_t stream) {
  const ncclResult_t result =
      ncclAllReduce(send, receive, static_cast<size_t>(count), type, op, comm, stream);
  if (result != ncclSuccess) return NcclStatus(result, "ncclAllReduce", comm);
  return absl::OkStatus();
}

absl::Status SendReceive(ncclComm_t comm, const std::vector<PeerTransfer>& transfers,
                         ncclDataType_t type, cudaStream_t stream) {
  if (transfers.empty()) return absl::OkStatus();
  PT_RETURN_IF_ERROR(NcclStatus(ncclGroupStart(), "ncclGroupStart", comm));
  ncclResult_t result = ncclSuccess;
  for (const PeerTransfer& t : transfers) {
    result = t.send ? ncclSend(t.buffer, static_cast<size_t>(t.count), type, t.peer, comm, stream)
                    : ncclRecv(t.buffer, static_cast<size_t>(t.count), type, t.peer, comm, stream);
    if (result != ncclSuccess) break;
  }
  // The group is closed even after a failed call, so NCCL's group state stays consistent.
  const ncclResult_t ended = ncclGroupEnd();
  PT_RETURN_IF_ERROR(NcclStatus(result, "ncclSend/ncclRecv", comm));
  return NcclStatus(ended, "ncclGroupEnd (send/receive)", comm);
}

absl::Status AllToAll(ncclComm_t comm, int64_t ranks, const void* send, void* receive,
                      int64_t count, ncclDataType_t type, cudaStream_t stream) {
  int64_t element_bytes = 0;
  if (type == ncclBfloat16) element_bytes = 2;
  if (type == ncclFloat32) element_bytes = 4;
  if (element_bytes == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("AllToAll: NCCL type ", static_cast<int>(type), " is not bf16 or fp32"));
  }
  const int64_t block_bytes = count * element_bytes;
  std::vector<PeerTransfer> transfers;
  for (int64_t peer = 0; peer < ranks; ++peer) {
    // ncclSend reads its buffer only; PeerTransfer holds both directions' pointers as void*.
    transfers.push_back({true, static_cast<int>(peer),
                         const_cast<char*>(static_cast<const char*>(send)) + peer * block_bytes,
                         count});
    transfers.push_back(
        {false, static_cast<int>(peer), static_cast<char*>(receive) + peer * block_bytes, count});
  }
  return SendReceive(comm, transfers, type, stream);
}

}  // namespace paratune
