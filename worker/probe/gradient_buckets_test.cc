#include "worker/probe/gradient_buckets.h"

#include <vector>

#include "gtest/gtest.h"

namespace paratune {
namespace {

TEST(DefaultBucketElementsTest, GrowsWithDataParallelSizeAbove40) {
  EXPECT_EQ(DefaultBucketElements(1), 40'000'000);
  EXPECT_EQ(DefaultBucketElements(40), 40'000'000);
  EXPECT_EQ(DefaultBucketElements(64), 64'000'000);
}

TEST(LayoutGradientBucketsTest, LastLayersComeFirstAndCloseBucketsAtTheLimit) {
  // Three layers of two tensors each, 100 elements per tensor, a bucket of 250 elements.
  std::vector<GradientTensor> tensors;
  for (int64_t layer = 0; layer < 3; ++layer) {
    tensors.push_back({100, layer});
    tensors.push_back({100, layer});
  }
  const GradientBucketLayout layout = LayoutGradientBuckets(tensors, 250, 1, false);
  ASSERT_EQ(layout.buckets.size(), 2u);
  EXPECT_EQ(layout.tensor_offsets, (std::vector<int64_t>{500, 400, 300, 200, 100, 0}));
  EXPECT_EQ(layout.buckets[0].tensors, (std::vector<int64_t>{5, 4, 3}));
  EXPECT_EQ(layout.buckets[0].first_layer, 1);
  EXPECT_EQ(layout.buckets[0].last_layer, 2);
  EXPECT_EQ(layout.buckets[0].end, 300);
  EXPECT_EQ(layout.buckets[1].tensors, (std::vector<int64_t>{2, 1, 0}));
  EXPECT_EQ(layout.buckets[1].first_layer, 0);
  EXPECT_EQ(layout.buckets[1].last_layer, 1);
  EXPECT_EQ(layout.buckets[1].start, 300);
  EXPECT_EQ(layout.elements, 600);
}

TEST(LayoutGradientBucketsTest, WithoutLimitEverythingIsOneBucket) {
  const std::vector<GradientTensor> tensors = {{10, 0}, {20, 1}, {30, 2}};
  const GradientBucketLayout layout = LayoutGradientBuckets(tensors, std::nullopt, 8, false);
  ASSERT_EQ(layout.buckets.size(), 1u);
  EXPECT_EQ(layout.buckets[0].first_layer, 0);
  EXPECT_EQ(layout.buckets[0].last_layer, 2);
  EXPECT_EQ(layout.elements, 60);
}

TEST(LayoutGradientBucketsTest, DistributedOptimizerAlignsTensorsAndPadsBucketsToShards) {
  // dp = 3: bucket ends on multiples of lcm(3, 128) = 384.
  const std::vector<GradientTensor> tensors = {{100, 0}, {100, 1}, {100, 2}};
  const GradientBucketLayout layout = LayoutGradientBuckets(tensors, 150, 3, true);
  ASSERT_EQ(layout.buckets.size(), 2u);
  // Tensor 2 at 0, tensor 1 at 128 (aligned to 64), closing the bucket at 228 elements.
  EXPECT_EQ(layout.tensor_offsets, (std::vector<int64_t>{384, 128, 0}));
  EXPECT_EQ(layout.buckets[0].unpadded_elements, 228);
  EXPECT_EQ(layout.buckets[0].end, 384);
  EXPECT_EQ(layout.buckets[1].unpadded_elements, 100);
  EXPECT_EQ(layout.buckets[1].end, 768);
  for (const GradientBucket& bucket : layout.buckets) {
    EXPECT_EQ((bucket.end - bucket.start) % 3, 0);
  }
  EXPECT_EQ(layout.elements, 768);
}

TEST(LayoutGradientBucketsTest, SharedEmbeddingGetsItsOwnBucketWithDistributedOptimizer) {
  // Embedding (layer 0, shared with the LM head of the last stage), then two layers.
  const std::vector<GradientTensor> tensors = {{1000, 0, true}, {10, 1}, {10, 2}};
  const GradientBucketLayout sharded = LayoutGradientBuckets(tensors, std::nullopt, 2, true);
  ASSERT_EQ(sharded.buckets.size(), 2u);
  EXPECT_EQ(sharded.buckets[0].tensors, (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(sharded.buckets[1].tensors, (std::vector<int64_t>{0}));
  EXPECT_EQ(sharded.buckets[1].first_layer, 0);

  const GradientBucketLayout replicated = LayoutGradientBuckets(tensors, std::nullopt, 2, false);
  EXPECT_EQ(replicated.buckets.size(), 1u);
}

}  // namespace
}  // namespace paratune
