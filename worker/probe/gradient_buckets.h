// How Megatron-LM's distributed data parallel splits a pipeline stage's gradient buffer into
// buckets, so that each bucket's data-parallel reduce-scatter can start as soon as the backward
// pass has written all of its gradients (megatron/core/distributed/param_and_grad_buffer.py,
// _ParamAndGradBuffer.__init__, core_v0.19.0) and, with --overlap-param-gather, each bucket's
// parameter all-gather can finish just before the forward pass first needs it.
#ifndef PARATUNE_WORKER_PROBE_GRADIENT_BUCKETS_H_
#define PARATUNE_WORKER_PROBE_GRADIENT_BUCKETS_H_

#include <cstdint>
#include <optional>
#include <vector>

namespace paratune {

// One parameter tensor of the stage, in forward order. `layer` is the index, in forward
// order, of the computation that uses it (the backward pass visits layers in reverse);
// `shared_embedding` marks an embedding tied to the LM head across pipeline stages.
struct GradientTensor {
  int64_t elements = 0;
  int64_t layer = 0;
  bool shared_embedding = false;
};

// A contiguous range [start, end) of the gradient buffer. `end - start` is a multiple of the
// data-parallel size with the distributed optimizer, so each rank reduce-scatters to an equal
// shard; `unpadded_elements` excludes that end padding.
struct GradientBucket {
  int64_t start = 0;
  int64_t end = 0;
  int64_t unpadded_elements = 0;
  std::vector<int64_t> tensors;  // indices into the input, in buffer order
  // The layers of its tensors: the backward pass completes the bucket with `first_layer`'s
  // backward, and the forward pass first needs it at `first_layer`'s forward.
  int64_t first_layer = 0;
  int64_t last_layer = 0;
};

struct GradientBucketLayout {
  std::vector<int64_t> tensor_offsets;  // per input tensor, elements from the buffer's start
  std::vector<GradientBucket> buckets;  // in buffer order: the last layers' tensors first
  int64_t elements = 0;                 // the buffer, padding included
};

// Megatron-LM's default bucket size in elements: max(40,000,000, 1,000,000 x dp), "larger DP
// sizes need larger buckets to ensure collectives do not become latency-bound"
// (distributed_data_parallel_config.py, bucket_size).
int64_t DefaultBucketElements(int64_t data_parallel_size);

// Lays out `tensors` as Megatron-LM does: in reverse order, to follow the backward pass; a
// bucket is closed once it holds at least `bucket_elements` (no limit when nullopt: one bucket,
// as Megatron-LM has without --overlap-grad-reduce); a shared embedding gets a bucket of its
// own with the distributed optimizer. With `distributed_optimizer`, tensors start at multiples
// of 64 elements and bucket ends are padded to a multiple of lcm(data_parallel_size, 128).
// Requires data_parallel_size >= 1, bucket_elements >= 1 and the tensors' layers in
// non-decreasing order, so that buckets' first_layer does not increase along the buffer.
GradientBucketLayout LayoutGradientBuckets(const std::vector<GradientTensor>& tensors,
                                           std::optional<int64_t> bucket_elements,
                                           int64_t data_parallel_size, bool distributed_optimizer);

}  // namespace paratune

#endif  // PARATUNE_WORKER_PROBE_GRADIENT_BUCKETS_H_
