#include "worker/probe/gradient_buckets.h"

#include <algorithm>
#include <numeric>
#include <utility>

namespace paratune {
namespace {

int64_t RoundUp(int64_t value, int64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

// 128-byte aligned tensor starts (64 elements of >= 16 bits), and 256-byte aligned buckets
// that shard evenly over the data-parallel ranks: _pad_start_of_param_if_needed and
// _pad_end_of_bucket_if_needed.
constexpr int64_t kTensorStartAlignment = 64;
constexpr int64_t kBucketEndAlignment = 128;

class BucketBuilder {
 public:
  BucketBuilder(const std::vector<GradientTensor>& tensors, int64_t data_parallel_size,
                bool distributed_optimizer)
      : tensors_(tensors),
        bucket_end_multiple_(
            distributed_optimizer ? std::lcm(data_parallel_size, kBucketEndAlignment) : 1),
        tensor_start_multiple_(distributed_optimizer ? kTensorStartAlignment : 1) {
    layout_.tensor_offsets.resize(tensors.size());
  }

  bool open() const { return !open_.tensors.empty(); }
  int64_t open_elements() const { return end_ - open_.start; }

  void Add(int64_t index) {
    const int64_t offset = RoundUp(end_, tensor_start_multiple_);
    layout_.tensor_offsets[index] = offset;
    end_ = offset + tensors_[index].elements;
    const int64_t layer = tensors_[index].layer;
    if (!open()) {
      open_.first_layer = layer;
      open_.last_layer = layer;
    }
    open_.first_layer = std::min(open_.first_layer, layer);
    open_.last_layer = std::max(open_.last_layer, layer);
    open_.tensors.push_back(index);
  }

  void Close() {
    open_.unpadded_elements = end_ - open_.start;
    open_.end = RoundUp(end_, bucket_end_multiple_);
    end_ = open_.end;
    layout_.buckets.push_back(std::move(open_));
    open_ = GradientBucket{};
    open_.start = end_;
  }

  GradientBucketLayout Finish() {
    if (open()) Close();
    layout_.elements = end_;
    return std::move(layout_);
  }

 private:
  const std::vector<GradientTensor>& tensors_;
  const int64_t bucket_end_multiple_;
  const int64_t tensor_start_multiple_;
  GradientBucketLayout layout_;
  GradientBucket open_;
  int64_t end_ = 0;
};

}  // namespace

int64_t DefaultBucketElements(int64_t data_parallel_size) {
  return std::max<int64_t>(40'000'000, 1'000'000 * data_parallel_size);
}

GradientBucketLayout LayoutGradientBuckets(const std::vector<GradientTensor>& tensors,
                                           std::optional<int64_t> bucket_elements,
                                           int64_t data_parallel_size, bool distributed_optimizer) {
  BucketBuilder builder(tensors, data_parallel_size, distributed_optimizer);
  for (int64_t index = static_cast<int64_t>(tensors.size()) - 1; index >= 0; --index) {
    // A shared embedding alone in its bucket shards the same way on the first and last stage,
    // so its reduce-scatter can precede the embedding all-reduce between them
    // (_does_param_require_new_bucket).
    const bool alone = distributed_optimizer && tensors[index].shared_embedding;
    if (alone && builder.open()) builder.Close();
    builder.Add(index);
    if (alone || (bucket_elements && builder.open_elements() >= *bucket_elements)) {
      builder.Close();
    }
  }
  return builder.Finish();
}

}  // namespace paratune
