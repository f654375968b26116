#include "worker/probe/overlap_plan.h"

#include <utility>

namespace paratune {
namespace {

class PlanBuilder {
 public:
  void Run(PlanOperation operation, PlanStream stream, int64_t index) {
    plan_.push_back({operation, stream, index});
  }

  // Makes `waiting` wait for the work issued so far on `recording`.
  void Order(PlanStream recording, PlanStream waiting) {
    const int64_t event = next_event_++;
    Run(PlanOperation::kRecordEvent, recording, event);
    Run(PlanOperation::kWaitEvent, waiting, event);
  }

  // Issues bucket `bucket`'s all-gather on the communication stream and returns the event
  // that marks its completion, for the compute stream to wait on later.
  int64_t Gather(int64_t bucket) {
    Run(PlanOperation::kAllGather, PlanStream::kCommunication, bucket);
    const int64_t event = next_event_++;
    Run(PlanOperation::kRecordEvent, PlanStream::kCommunication, event);
    return event;
  }

  std::vector<PlanStep> Finish() { return std::move(plan_); }

 private:
  std::vector<PlanStep> plan_;
  int64_t next_event_ = 0;
};

void PlanForward(int64_t layers, const std::vector<GradientBucket>& buckets,
                 const OverlapOptions& options, PlanBuilder& plan) {
  // Buffer order follows the backward pass, so the forward pass needs the buckets in reverse.
  // Without overlap the distributed optimizer gathers everything after its step
  // (distrib_optimizer.py, step_with_ready_grads); with it, zero_grad dispatches the first
  // bucket's all-gather and each forward pre-hook waits for its bucket and then dispatches the
  // next one (param_and_grad_buffer.py, _ParamAndGradBucketGroup.finish_param_sync).
  const int64_t count = static_cast<int64_t>(buckets.size());
  if (options.distributed_optimizer && !options.overlap_param_gather) {
    for (int64_t bucket = count - 1; bucket >= 0; --bucket) {
      plan.Run(PlanOperation::kAllGather, PlanStream::kCommunication, bucket);
    }
    plan.Order(PlanStream::kCommunication, PlanStream::kCompute);
  }
  const bool prefetch = options.distributed_optimizer && options.overlap_param_gather;
  int64_t next = count - 1;  // the next bucket the forward pass needs
  int64_t gathered = prefetch && next >= 0 ? plan.Gather(next) : -1;
  for (int64_t layer = 0; layer < layers; ++layer) {
    while (prefetch && next >= 0 && buckets[next].first_layer == layer) {
      plan.Run(PlanOperation::kWaitEvent, PlanStream::kCompute, gathered);
      if (--next >= 0) gathered = plan.Gather(next);
    }
    plan.Run(PlanOperation::kForward, PlanStream::kCompute, layer);
  }
}

void PlanBackward(int64_t layers, const std::vector<GradientBucket>& buckets,
                  const OverlapOptions& options, PlanBuilder& plan) {
  const PlanOperation reduce =
      options.distributed_optimizer ? PlanOperation::kReduceScatter : PlanOperation::kAllReduce;
  const int64_t count = static_cast<int64_t>(buckets.size());
  int64_t next = 0;  // the next bucket the backward pass completes
  for (int64_t layer = layers - 1; layer >= 0; --layer) {
    plan.Run(PlanOperation::kBackward, PlanStream::kCompute, layer);
    while (options.overlap_grad_reduce && next < count && buckets[next].first_layer == layer) {
      plan.Order(PlanStream::kCompute, PlanStream::kCommunication);
      plan.Run(reduce, PlanStream::kCommunication, next++);
    }
  }
  if (next < count) plan.Order(PlanStream::kCompute, PlanStream::kCommunication);
  for (; next < count; ++next) plan.Run(reduce, PlanStream::kCommunication, next);
  plan.Order(PlanStream::kCommunication, PlanStream::kCompute);
}

}  // namespace

std::vector<PlanStep> OverlapPlanOf(int64_t layers, const std::vector<GradientBucket>& buckets,
                                    const OverlapOptions& options) {
  PlanBuilder plan;
  PlanForward(layers, buckets, options, plan);
  PlanBackward(layers, buckets, options, plan);
  return plan.Finish();
}

}  // namespace paratune
