#include "worker/probe/overlap_plan.h"

#include <algorithm>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "worker/probe/gradient_buckets.h"

namespace paratune {
namespace {

// Every layer's forward and backward take 1 s; a collective on one bucket `collective_seconds`.
constexpr double kLayerSeconds = 1.0;

// Runs a plan as two CUDA streams would: each stream runs its operations in issue order, a
// wait holds its stream until the event's recorded work is done. Fails the test when a wait
// names an event not recorded yet (the runner would wait on nothing), when a forward runs
// before its parameters are gathered (with `gathers`: the distributed optimizer), or when a bucket
// is reduced before the backward of every layer it holds has run.
class TwoStreamSimulation {
 public:
  TwoStreamSimulation(int64_t layers, const std::vector<GradientBucket>& buckets,
                      double collective_seconds, bool gathers)
      : layers_(layers),
        buckets_(buckets),
        collective_seconds_(collective_seconds),
        gathers_(gathers) {}

  void Run(const std::vector<PlanStep>& plan) {
    for (const PlanStep& step : plan) {
      double& clock = clocks_[step.stream];
      switch (step.operation) {
        case PlanOperation::kForward:
          for (int64_t bucket = 0; bucket < static_cast<int64_t>(buckets_.size()); ++bucket) {
            if (gathers_ && buckets_[bucket].first_layer <= step.index &&
                step.index <= buckets_[bucket].last_layer) {
              ASSERT_TRUE(gathered_.count(bucket)) << "layer " << step.index;
              EXPECT_LE(gathered_[bucket], clock) << "layer " << step.index;
            }
          }
          clock += kLayerSeconds;
          ++forwards_[step.index];
          break;
        case PlanOperation::kBackward:
          clock += kLayerSeconds;
          backward_done_[step.index] = clock;
          break;
        case PlanOperation::kAllGather:
          clock += collective_seconds_;
          gathered_[step.index] = clock;
          break;
        case PlanOperation::kReduceScatter:
        case PlanOperation::kAllReduce:
          for (int64_t layer = buckets_[step.index].first_layer;
               layer <= buckets_[step.index].last_layer; ++layer) {
            ASSERT_TRUE(backward_done_.count(layer)) << "bucket " << step.index;
            EXPECT_LE(backward_done_[layer], clock) << "bucket " << step.index;
          }
          clock += collective_seconds_;
          ++reduced_[step.index];
          break;
        case PlanOperation::kRecordEvent:
          events_[step.index] = clock;
          break;
        case PlanOperation::kWaitEvent:
          ASSERT_TRUE(events_.count(step.index)) << "event " << step.index;
          clock = std::max(clock, events_[step.index]);
          break;
      }
    }
  }

  // Communication time not hidden behind compute: how long the step lasts beyond its
  // 2 x layers seconds of compute.
  double ExposedSeconds() const {
    return std::max(clocks_.at(PlanStream::kCompute), clocks_.at(PlanStream::kCommunication)) -
           2 * kLayerSeconds * layers_;
  }

  void ExpectEveryLayerAndBucketOnce() const {
    for (int64_t layer = 0; layer < layers_; ++layer) {
      EXPECT_EQ(forwards_.at(layer), 1) << layer;
      EXPECT_TRUE(backward_done_.count(layer)) << layer;
    }
    for (int64_t bucket = 0; bucket < static_cast<int64_t>(buckets_.size()); ++bucket) {
      EXPECT_EQ(reduced_.at(bucket), 1) << bucket;
      EXPECT_EQ(gathered_.count(bucket), gathers_ ? 1u : 0u) << bucket;
    }
  }

 private:
  const int64_t layers_;
  const std::vector<GradientBucket>& buckets_;
  const double collective_seconds_;
  const bool gathers_;
  std::map<PlanStream, double> clocks_ = {{PlanStream::kCompute, 0.0},
                                          {PlanStream::kCommunication, 0.0}};
  std::map<int64_t, double> events_;
  std::map<int64_t, double> gathered_;
  std::map<int64_t, double> backward_done_;
  std::map<int64_t, int> forwards_;
  std::map<int64_t, int> reduced_;
};

// `layers` layers of two 100-element tensors each, in buckets of `bucket_elements`.
std::vector<GradientBucket> BucketsOf(int64_t layers, std::optional<int64_t> bucket_elements) {
  std::vector<GradientTensor> tensors;
  for (int64_t layer = 0; layer < layers; ++layer) {
    tensors.push_back({100, layer});
    tensors.push_back({100, layer});
  }
  return LayoutGradientBuckets(tensors, bucket_elements, 2, true).buckets;
}

double ExposedSeconds(int64_t layers, const std::vector<GradientBucket>& buckets,
                      const OverlapOptions& options, double collective_seconds) {
  TwoStreamSimulation simulation(layers, buckets, collective_seconds,
                                 options.distributed_optimizer);
  simulation.Run(OverlapPlanOf(layers, buckets, options));
  simulation.ExpectEveryLayerAndBucketOnce();
  return simulation.ExposedSeconds();
}

TEST(OverlapPlanTest, ReduceScatterFollowsTheBackwardThatCompletesItsBucket) {
  // Buckets of two layers: bucket 0 holds layers 2 and 3, bucket 1 layers 0 and 1.
  const std::vector<GradientBucket> buckets = BucketsOf(4, 400);
  ASSERT_EQ(buckets.size(), 2u);
  const std::vector<PlanStep> plan = OverlapPlanOf(4, buckets, {true, true, false});
  const auto backward_end = std::find_if(plan.begin(), plan.end(), [](const PlanStep& step) {
    return step.operation == PlanOperation::kBackward;
  });
  const std::vector<PlanStep> backward(backward_end, plan.end());
  using Op = PlanOperation;
  using Stream = PlanStream;
  const std::vector<std::pair<Op, Stream>> expected = {{Op::kBackward, Stream::kCompute},
                                                       {Op::kBackward, Stream::kCompute},
                                                       {Op::kRecordEvent, Stream::kCompute},
                                                       {Op::kWaitEvent, Stream::kCommunication},
                                                       {Op::kReduceScatter, Stream::kCommunication},
                                                       {Op::kBackward, Stream::kCompute},
                                                       {Op::kBackward, Stream::kCompute},
                                                       {Op::kRecordEvent, Stream::kCompute},
                                                       {Op::kWaitEvent, Stream::kCommunication},
                                                       {Op::kReduceScatter, Stream::kCommunication},
                                                       {Op::kRecordEvent, Stream::kCommunication},
                                                       {Op::kWaitEvent, Stream::kCompute}};
  ASSERT_EQ(backward.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(backward[i].operation, expected[i].first) << i;
    EXPECT_EQ(backward[i].stream, expected[i].second) << i;
  }
  EXPECT_EQ(backward[0].index, 3);
  EXPECT_EQ(backward[4].index, 0);
  EXPECT_EQ(backward[9].index, 1);
}

TEST(OverlapPlanTest, OnlyTheLastBucketsReductionIsExposedWithOverlap) {
  // Two buckets of two layers, 1.5 s to reduce each: bucket 0 runs from 2 s to 3.5 s, hidden
  // behind the backward of layers 1 and 0; bucket 1 starts when the backward ends.
  const std::vector<GradientBucket> buckets = BucketsOf(4, 400);
  const OverlapOptions without_gather = {false, true, false};
  EXPECT_DOUBLE_EQ(ExposedSeconds(4, buckets, without_gather, 1.5), 1.5);
  const OverlapOptions no_overlap = {false, false, false};
  EXPECT_DOUBLE_EQ(ExposedSeconds(4, buckets, no_overlap, 1.5), 3.0);
}

TEST(OverlapPlanTest, SlowReductionsQueueOnTheCommunicationStream) {
  // 3 s per bucket: bucket 0 from 2 s to 5 s, bucket 1 from 5 s to 8 s, compute ends at 4 s.
  const std::vector<GradientBucket> buckets = BucketsOf(4, 400);
  EXPECT_DOUBLE_EQ(ExposedSeconds(4, buckets, {false, true, false}, 3.0), 4.0);
}

TEST(OverlapPlanTest, OnlyTheFirstBucketsGatherIsExposedWithOverlap) {
  // With no gradient overlap, reductions add 2 x 0.5 s either way; gathers add 0.5 s (the first
  // bucket, which the first layer needs) with overlap and 1 s without.
  const std::vector<GradientBucket> buckets = BucketsOf(4, 400);
  EXPECT_DOUBLE_EQ(ExposedSeconds(4, buckets, {true, false, true}, 0.5), 1.5);
  EXPECT_DOUBLE_EQ(ExposedSeconds(4, buckets, {true, false, false}, 0.5), 2.0);
}

TEST(OverlapPlanTest, EveryBucketingKeepsDependencies) {
  for (int64_t layers : {1, 3, 5}) {
    for (std::optional<int64_t> bucket_elements :
         std::vector<std::optional<int64_t>>{std::nullopt, 1, 150, 250, 1000}) {
      const std::vector<GradientBucket> buckets = BucketsOf(layers, bucket_elements);
      for (int mask = 0; mask < 8; ++mask) {
        const OverlapOptions options = {(mask & 1) != 0, (mask & 2) != 0, (mask & 6) == 6};
        SCOPED_TRACE(testing::Message() << layers << " layers, mask " << mask);
        ExposedSeconds(layers, buckets, options, 0.25);
      }
    }
  }
}

}  // namespace
}  // namespace paratune
