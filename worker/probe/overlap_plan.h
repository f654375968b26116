// The order in which one pipeline stage issues its layers' compute and its data-parallel
// collectives on two CUDA streams, so that communication overlaps computation as in
// Megatron-LM with --overlap-grad-reduce and --overlap-param-gather
// (megatron/core/distributed/distributed_data_parallel.py: the backward hook of the last
// gradient of a bucket starts its reduce-scatter; the forward pre-hook of a bucket's first
// parameter waits for its all-gather and dispatches the next bucket's). A pure plan: the CUDA
// runner issues the steps in order, each on its stream.
#ifndef PARATUNE_WORKER_PROBE_OVERLAP_PLAN_H_
#define PARATUNE_WORKER_PROBE_OVERLAP_PLAN_H_

#include <cstdint>
#include <vector>

#include "worker/probe/gradient_buckets.h"

namespace paratune {

enum class PlanStream { kCompute, kCommunication };

enum class PlanOperation {
  kForward,        // `index`: the layer, on the compute stream
  kBackward,       // `index`: the layer, on the compute stream
  kAllGather,      // `index`: the bucket's parameters, gathered from their data-parallel shards
  kReduceScatter,  // `index`: the bucket's gradients, reduced to their shards
  kAllReduce,      // `index`: the bucket's gradients, reduced everywhere (no sharding)
  kRecordEvent,    // `index`: the event, marking the work issued on `stream` so far
  kWaitEvent,      // `index`: the event; `stream` runs nothing after this until it completes
};

// One operation issued on `stream`. Operations on one stream run in issue order; the two
// streams meet only through events.
struct PlanStep {
  PlanOperation operation = PlanOperation::kForward;
  PlanStream stream = PlanStream::kCompute;
  int64_t index = 0;
};

// The data-parallel switches of Megatron-LM that shape the plan. overlap_param_gather
// requires distributed_optimizer, as in Megatron-LM.
struct OverlapOptions {
  bool distributed_optimizer = false;
  bool overlap_grad_reduce = false;
  bool overlap_param_gather = false;
};

// The steps of one micro-batch's forward and backward passes over `layers` layers (0 ..
// layers - 1, in forward order), the micro-batch being the training step's first for
// parameter gathering and its last for gradient reduction. `buckets` are in buffer order, as
// LayoutGradientBuckets returns them, with layers in [0, layers).
//
// Parameters: with the distributed optimizer, each bucket is all-gathered before the forward
// of its first_layer: the first bucket needed at the start and the next one prefetched as each
// is waited for, with overlap_param_gather; all at the start, before any forward, without.
// Gradients: each bucket is reduce-scattered (all-reduced without the distributed optimizer)
// once the backward of its first_layer has run, with overlap_grad_reduce; all after the last
// backward, without. The compute stream waits for every reduction at the end, as the
// optimizer step that follows does (finish_grad_sync).
std::vector<PlanStep> OverlapPlanOf(int64_t layers, const std::vector<GradientBucket>& buckets,
                                    const OverlapOptions& options);

}  // namespace paratune

#endif  // PARATUNE_WORKER_PROBE_OVERLAP_PLAN_H_
