#include "worker/probe/tensor_parallel_overlap_plan.h"

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

TEST(TensorParallelOverlapPlanTest, MethodsAreTransformerEnginesDefaults) {
  const TensorParallelOverlapPlan plan = *TensorParallelOverlapPlanOf(4, 4096);
  ASSERT_EQ(plan.steps.size(), 10u);
  struct Expected {
    TpOverlapSite site;
    TpCollective collective;
    TpOverlapMethod method;
    int64_t chunks;
  };
  using C = TpCollective;
  using M = TpOverlapMethod;
  using S = TpOverlapSite;
  const Expected expected[] = {
      {S::kQkvForward, C::kAllGather, M::kRingExchange, 4},
      {S::kProjectionForward, C::kReduceScatter, M::kPipeline, 4},
      {S::kGateUpForward, C::kAllGather, M::kRingExchange, 4},
      {S::kDownForward, C::kReduceScatter, M::kPipeline, 4},
      {S::kDownInputGradient, C::kAllGather, M::kRingExchange, 4},
      {S::kGateUpInputGradient, C::kAllGather, M::kBulk, 1},
      {S::kGateUpWeightGradient, C::kReduceScatter, M::kBulk, 1},
      {S::kProjectionInputGradient, C::kAllGather, M::kRingExchange, 4},
      {S::kQkvInputGradient, C::kAllGather, M::kBulk, 1},
      {S::kQkvWeightGradient, C::kReduceScatter, M::kBulk, 1},
  };
  for (const Expected& e : expected) {
    const TpOverlapStep& step = plan.step(e.site);
    EXPECT_EQ(step.site, e.site);
    EXPECT_EQ(step.collective, e.collective);
    EXPECT_EQ(step.method, e.method);
    EXPECT_EQ(step.chunks, e.chunks);
  }
}

TEST(TensorParallelOverlapPlanTest, CountsTheLayersCollectivesOfKorthikanti) {
  // Forward: 2 all-gathers and 2 reduce-scatters; backward: 2 + 2 all-gathers (the output
  // gradients' and the re-gathered inputs') and 2 reduce-scatters (DESIGN.md §5.3).
  const TensorParallelOverlapPlan plan = *TensorParallelOverlapPlanOf(8, 8192);
  int gathers = 0;
  int scatters = 0;
  for (const TpOverlapStep& step : plan.steps) {
    (step.collective == TpCollective::kAllGather ? gathers : scatters) += 1;
  }
  EXPECT_EQ(gathers, 6);
  EXPECT_EQ(scatters, 4);
}

TEST(TensorParallelOverlapPlanTest, SplitsKeepColumnChunksAligned) {
  EXPECT_EQ(TensorParallelOverlapPlanOf(2, 4096)->pipeline_splits, 4);
  EXPECT_EQ(TensorParallelOverlapPlanOf(2, 48)->pipeline_splits, 2);
  EXPECT_EQ(TensorParallelOverlapPlanOf(2, 24)->pipeline_splits, 1);
  EXPECT_EQ(TensorParallelOverlapPlanOf(2, 24)->step(TpOverlapSite::kDownForward).chunks, 1);
}

TEST(TensorParallelOverlapPlanTest, RejectsWhatCannotOverlap) {
  const absl::StatusOr<TensorParallelOverlapPlan> one = TensorParallelOverlapPlanOf(1, 4096);
  EXPECT_EQ(one.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(one.status().message().find("tensor_parallel (1)"), std::string::npos);
  const absl::StatusOr<TensorParallelOverlapPlan> empty = TensorParallelOverlapPlanOf(2, 0);
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(empty.status().message().find("hidden (0)"), std::string::npos);
}

TEST(TensorParallelOverlapPlanTest, EveryRanksRowsMultipliedOncePerGemm) {
  for (int64_t tp = 2; tp <= 8; ++tp) {
    for (int64_t rank = 0; rank < tp; ++rank) {
      const std::vector<RingExchangeStep> steps = RingExchangeOrder(tp, rank);
      ASSERT_EQ(static_cast<int64_t>(steps.size()), tp);
      std::multiset<int64_t> computed;
      for (const RingExchangeStep& step : steps) computed.insert(step.compute_chunk);
      for (int64_t chunk = 0; chunk < tp; ++chunk) {
        EXPECT_EQ(computed.count(chunk), 1u) << "tp " << tp << " rank " << rank;
      }
      // The rank starts with its own rows, which it holds without an exchange.
      EXPECT_EQ(steps[0].compute_chunk, rank);
    }
  }
}

TEST(TensorParallelOverlapPlanTest, RingSendsAndReceivesPairUp) {
  for (int64_t tp = 2; tp <= 8; ++tp) {
    std::vector<std::vector<RingExchangeStep>> ranks;
    for (int64_t rank = 0; rank < tp; ++rank) ranks.push_back(RingExchangeOrder(tp, rank));
    for (int64_t rank = 0; rank < tp; ++rank) {
      for (int64_t i = 0; i < tp; ++i) {
        const RingExchangeStep& step = ranks[rank][i];
        // Every rank exchanges on the same steps: the group of each step is complete.
        EXPECT_EQ(step.send_chunk < 0, i + 1 == tp);
        EXPECT_EQ(step.receive_chunk < 0, i + 1 == tp);
        if (step.send_chunk < 0) continue;
        const RingExchangeStep& peer = ranks[step.send_to][i];
        EXPECT_EQ(peer.receive_from, rank);
        EXPECT_EQ(peer.receive_chunk, step.send_chunk) << "tp " << tp << " step " << i;
        const RingExchangeStep& source = ranks[step.receive_from][i];
        EXPECT_EQ(source.send_to, rank);
        EXPECT_EQ(source.send_chunk, step.receive_chunk);
      }
    }
  }
}

TEST(TensorParallelOverlapPlanTest, RingHoldsEveryChunkBeforeUsingIt) {
  // Simulates the ring: a rank sends and multiplies only chunks it holds (its own or one it
  // received on an earlier step), and it never receives a chunk twice.
  for (int64_t tp = 2; tp <= 8; ++tp) {
    for (int64_t rank = 0; rank < tp; ++rank) {
      std::set<int64_t> held = {rank};
      for (const RingExchangeStep& step : RingExchangeOrder(tp, rank)) {
        EXPECT_TRUE(held.count(step.compute_chunk)) << "tp " << tp << " rank " << rank;
        if (step.send_chunk >= 0) {
          EXPECT_TRUE(held.count(step.send_chunk));
          EXPECT_TRUE(held.insert(step.receive_chunk).second);
        }
      }
      EXPECT_EQ(static_cast<int64_t>(held.size()), tp);
    }
  }
}

TEST(TensorParallelOverlapPlanTest, PipelineChunksTileTheColumns) {
  for (int64_t splits : {1, 2, 4}) {
    const std::vector<ColumnChunk> chunks = PipelineChunks(4096, splits);
    ASSERT_EQ(static_cast<int64_t>(chunks.size()), splits);
    int64_t next = 0;
    for (const ColumnChunk& chunk : chunks) {
      EXPECT_EQ(chunk.first, next);
      EXPECT_EQ(chunk.count, 4096 / splits);
      next += chunk.count;
    }
    EXPECT_EQ(next, 4096);
  }
}

}  // namespace
}  // namespace paratune
