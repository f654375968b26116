#include "worker/cuda/fp8_amax_group.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "worker/cuda/cuda_status.h"

namespace paratune {

absl::StatusOr<std::unique_ptr<Fp8AmaxGroup>> Fp8AmaxGroup::Create(
    const RankCommunicators& communicators) {
  const RankLayout& layout = communicators.layout();
  // Megatron-LM's rank order puts pipeline outermost: a stage's ranks are contiguous.
  const int64_t size = layout.tp() * layout.cp() * layout.dp();
  if (size == 1) return std::unique_ptr<Fp8AmaxGroup>(new Fp8AmaxGroup(nullptr, 1));
  const int64_t rank = communicators.rank();
  ncclComm_t comm = nullptr;
  PT_RETURN_IF_ERROR(NcclStatus(ncclCommSplit(communicators.world(), static_cast<int>(rank / size),
                                              static_cast<int>(rank % size), &comm, nullptr),
                                absl::StrCat("ncclCommSplit (fp8 amax group of ", size, " ranks)"),
                                communicators.world()));
  return std::unique_ptr<Fp8AmaxGroup>(new Fp8AmaxGroup(comm, size));
}

Fp8AmaxGroup::~Fp8AmaxGroup() {
  if (comm_ != nullptr) ncclCommDestroy(comm_);
}

}  // namespace paratune
