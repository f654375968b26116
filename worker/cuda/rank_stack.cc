#include "worker/cuda/rank_stack.h"

#include "common/status_macros.h"
#include "worker/cuda/cuda_status.h"

namespace paratune {

RankStack::Streams::~Streams() {
  if (tensor_communication != nullptr) cudaStreamDestroy(tensor_communication);
  if (communication != nullptr) cudaStreamDestroy(communication);
  if (compute != nullptr) cudaStreamDestroy(compute);
}

RankStack::RankStack(const ProbeSpec& spec, int64_t rank)
    : plan_(FootprintPlan::OfStage(spec, spec.layout().CoordinatesOf(rank).pp)),
      optimizer_(OptimizerLayoutOf(spec, plan_, rank)) {}

absl::StatusOr<std::unique_ptr<RankStack>> RankStack::Create(const ProbeSpec& spec, int64_t rank,
                                                             const ncclUniqueId& id) {
  std::unique_ptr<RankStack> stack(new RankStack(spec, rank));
  Streams& streams = stack->streams_;
  PT_RETURN_IF_ERROR(CudaStatus(cudaStreamCreateWithFlags(&streams.compute, cudaStreamNonBlocking),
                                "cudaStreamCreate"));
  PT_RETURN_IF_ERROR(
      CudaStatus(cudaStreamCreateWithFlags(&streams.communication, cudaStreamNonBlocking),
                 "cudaStreamCreate(communication)"));
  PT_RETURN_IF_ERROR(
      CudaStatus(cudaStreamCreateWithFlags(&streams.tensor_communication, cudaStreamNonBlocking),
                 "cudaStreamCreate(tensor communication)"));
  PT_ASSIGN_OR_RETURN(stack->communicators_, RankCommunicators::Create(id, spec.layout(), rank));
  if (spec.training().fp8()) {
    PT_ASSIGN_OR_RETURN(stack->amax_group_, Fp8AmaxGroup::Create(*stack->communicators_));
  }
  const FootprintPlan& plan = stack->plan_;
  PT_ASSIGN_OR_RETURN(stack->memory_, DeviceFootprint::Allocate(plan));
  PT_ASSIGN_OR_RETURN(stack->gemm_,
                      Gemm::Create(stack->memory_->get<void>(ProbeBuffer::kGemmWorkspace),
                                   plan.placement(ProbeBuffer::kGemmWorkspace).bytes));
  stack->timer_ = std::make_unique<PhaseTimer>(streams.compute);
  PT_ASSIGN_OR_RETURN(
      stack->ops_, CudaDeviceOps::Create(
                       spec, plan, *stack->memory_, *stack->communicators_,
                       stack->amax_group_ != nullptr ? stack->amax_group_->comm() : nullptr,
                       stack->optimizer_, stack->gemm_.get(), streams.compute,
                       streams.communication, streams.tensor_communication, stack->timer_.get()));
  PT_RETURN_IF_ERROR(stack->ops_->Initialize(spec.seed()));
  PT_ASSIGN_OR_RETURN(stack->runner_,
                      StageRunner::Create(spec, plan, stack->optimizer_, rank, stack->ops_.get()));
  return stack;
}

}  // namespace paratune
