#include "worker/probe/tensor_parallel_overlap_plan.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace paratune {
namespace {

// cuBLASLt wants 16-byte aligned matrices: 8 bf16 columns.
constexpr int64_t kAlignedColumns = 8;

int64_t Modulo(int64_t value, int64_t modulus) { return ((value % modulus) + modulus) % modulus; }

}  // namespace

absl::StatusOr<TensorParallelOverlapPlan> TensorParallelOverlapPlanOf(int64_t tensor_parallel,
                                                                      int64_t hidden) {
  if (tensor_parallel < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor_parallel (", tensor_parallel, ") must be at least 2 to overlap"));
  }
  if (hidden < 1) {
    return absl::InvalidArgumentError(absl::StrCat("hidden (", hidden, ") must be positive"));
  }
  TensorParallelOverlapPlan plan;
  plan.tensor_parallel = tensor_parallel;
  plan.pipeline_splits = 1;
  for (int64_t splits = kDefaultPipelineSplits; splits > 1; splits /= 2) {
    if (hidden % (splits * kAlignedColumns) == 0) {
      plan.pipeline_splits = splits;
      break;
    }
  }
  auto add = [&](TpOverlapSite site, TpCollective collective, TpOverlapMethod method) {
    int64_t chunks = 1;
    if (method == TpOverlapMethod::kRingExchange) chunks = tensor_parallel;
    if (method == TpOverlapMethod::kPipeline) chunks = plan.pipeline_splits;
    plan.steps.push_back({site, collective, method, chunks});
  };
  using C = TpCollective;
  using M = TpOverlapMethod;
  using S = TpOverlapSite;
  add(S::kQkvForward, C::kAllGather, M::kRingExchange);
  add(S::kProjectionForward, C::kReduceScatter, M::kPipeline);
  add(S::kGateUpForward, C::kAllGather, M::kRingExchange);
  add(S::kDownForward, C::kReduceScatter, M::kPipeline);
  add(S::kDownInputGradient, C::kAllGather, M::kRingExchange);
  add(S::kGateUpInputGradient, C::kAllGather, M::kBulk);
  add(S::kGateUpWeightGradient, C::kReduceScatter, M::kBulk);
  add(S::kProjectionInputGradient, C::kAllGather, M::kRingExchange);
  add(S::kQkvInputGradient, C::kAllGather, M::kBulk);
  add(S::kQkvWeightGradient, C::kReduceScatter, M::kBulk);
  return plan;
}

std::vector<RingExchangeStep> RingExchangeOrder(int64_t tensor_parallel, int64_t rank) {
  std::vector<RingExchangeStep> steps(tensor_parallel);
  for (int64_t i = 0; i < tensor_parallel; ++i) {
    RingExchangeStep& step = steps[i];
    step.compute_chunk = Modulo(rank - i, tensor_parallel);
    step.send_to = Modulo(rank + 1, tensor_parallel);
    step.receive_from = Modulo(rank - 1, tensor_parallel);
    if (i + 1 < tensor_parallel) {
      // The chunk just multiplied goes on; the previous rank's goes into the next product.
      step.send_chunk = step.compute_chunk;
      step.receive_chunk = Modulo(rank - i - 1, tensor_parallel);
    }
  }
  return steps;
}

std::vector<ColumnChunk> PipelineChunks(int64_t columns, int64_t splits) {
  std::vector<ColumnChunk> chunks(splits);
  const int64_t count = columns / splits;
  for (int64_t i = 0; i < splits; ++i) chunks[i] = {i * count, count};
  return chunks;
}

}  // namespace paratune
