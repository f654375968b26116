#include "worker/probe/context_parallel_ring.h"

#include <set>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"

namespace paratune {
namespace {

// Position in the sequence of local token t of `rank` (attention_kernels.h's TokenPositions).
int64_t PositionOf(int64_t c, int64_t rank, int64_t tokens, int64_t t) {
  const int64_t half = tokens / 2;
  return t < half ? rank * half + t : (2 * c - 1 - rank) * half + (t - half);
}

std::vector<RingStep> Steps(int64_t c, int64_t rank, int64_t tokens) {
  absl::StatusOr<std::vector<RingStep>> steps = ContextRingSteps(c, rank, tokens);
  EXPECT_TRUE(steps.ok()) << steps.status();
  return steps.ok() ? *steps : std::vector<RingStep>{};
}

// Every (query, key) pair of the sequence with key position <= query position is computed
// exactly once over all ranks and steps, and no other pair.
TEST(ContextParallelRingTest, ComputesEveryCausalPairExactlyOnce) {
  for (int64_t c : {2, 3, 4, 5, 8}) {
    for (int64_t tokens : {2, 4, 6}) {
      const int64_t s = c * tokens;
      std::vector<int> computed(s * s, 0);
      for (int64_t rank = 0; rank < c; ++rank) {
        for (const RingStep& step : Steps(c, rank, tokens)) {
          for (const RingProduct& p : step.products) {
            for (int64_t t = p.first_query; t < p.first_query + p.queries; ++t) {
              for (int64_t k = p.first_key; k < p.first_key + p.keys; ++k) {
                if (p.mask == RingMask::kCausal && k > t) continue;
                const int64_t query = PositionOf(c, rank, tokens, t);
                const int64_t key = PositionOf(c, step.source_rank, tokens, k);
                ++computed[query * s + key];
              }
            }
          }
        }
      }
      for (int64_t query = 0; query < s; ++query) {
        for (int64_t key = 0; key < s; ++key) {
          ASSERT_EQ(computed[query * s + key], key <= query ? 1 : 0)
              << "c " << c << " tokens " << tokens << " query " << query << " key " << key;
        }
      }
    }
  }
}

// Transformer Engine's three kinds of step, and causal products only on the diagonal.
TEST(ContextParallelRingTest, StepsAreTheDiagonalTheFirstHalfOfKeysOrTheSecondHalfOfQueries) {
  const int64_t c = 4, tokens = 8;
  for (int64_t rank = 0; rank < c; ++rank) {
    const std::vector<RingStep> steps = Steps(c, rank, tokens);
    ASSERT_EQ(steps.size(), c);
    for (int64_t i = 0; i < c; ++i) {
      ASSERT_EQ(steps[i].products.size(), 1);
      const RingProduct& p = steps[i].products[0];
      if (i == 0) {
        EXPECT_EQ(p.mask, RingMask::kCausal);
        EXPECT_EQ(p.first_query, p.first_key);
        EXPECT_EQ(p.queries, tokens);
        EXPECT_EQ(p.keys, tokens);
      } else if (i <= rank) {
        EXPECT_EQ(p.mask, RingMask::kNone);
        EXPECT_EQ(p.first_query, 0);
        EXPECT_EQ(p.queries, tokens);
        EXPECT_EQ(p.first_key, 0);
        EXPECT_EQ(p.keys, tokens / 2);
      } else {
        EXPECT_EQ(p.mask, RingMask::kNone);
        EXPECT_EQ(p.first_query, tokens / 2);
        EXPECT_EQ(p.queries, tokens / 2);
        EXPECT_EQ(p.first_key, 0);
        EXPECT_EQ(p.keys, tokens);
      }
    }
  }
}

// Each rank holds every block once, its own first, and each later block is the one its
// previous rank held the step before; a block's gradients, passed to the next rank after the
// step, reach the rank holding that block the next step, and after the last step its owner.
TEST(ContextParallelRingTest, BlocksAndTheirGradientsTravelTheRing) {
  for (int64_t c : {2, 3, 4, 8}) {
    std::vector<std::vector<RingStep>> ranks;
    for (int64_t rank = 0; rank < c; ++rank) ranks.push_back(Steps(c, rank, 2));
    for (int64_t rank = 0; rank < c; ++rank) {
      const int64_t previous = RingPrevious(c, rank), next = RingNext(c, rank);
      EXPECT_EQ(RingNext(c, previous), rank);
      std::set<int64_t> held;
      EXPECT_EQ(ranks[rank][0].source_rank, rank);
      for (int64_t i = 0; i < c; ++i) {
        held.insert(ranks[rank][i].source_rank);
        if (i > 0) {
          EXPECT_EQ(ranks[rank][i].source_rank, ranks[previous][i - 1].source_rank);
        }
        if (i + 1 < c) {
          EXPECT_EQ(ranks[next][i + 1].source_rank, ranks[rank][i].source_rank);
        } else {
          EXPECT_EQ(next, ranks[rank][i].source_rank) << "c " << c << " rank " << rank;
        }
      }
      EXPECT_EQ(held.size(), c);
    }
  }
}

// Double buffering: a step never receives into the slot it reads, the block it reads arrived
// in the previous step's receive, and the slots stay within the buffers.
TEST(ContextParallelRingTest, ExchangesNeverWriteTheSlotBeingRead) {
  for (int64_t c : {2, 3, 4, 8}) {
    for (int64_t i = 0; i < c; ++i) {
      const int64_t reads = KeyValueSlot(i);
      EXPECT_EQ(reads == kOwnBlock, i == 0);
      if (i + 1 < c) {  // step i receives step i + 1's block
        EXPECT_NE(KeyValueSlot(i + 1), reads);
        EXPECT_GE(KeyValueSlot(i + 1), 0);
        EXPECT_LT(KeyValueSlot(i + 1), RingKeyValueSlots(c));
      }
      // Step i + 1 sends GradientSlot(i) while receiving into GradientSlot(i + 1); the rank
      // computes its part apart from both.
      EXPECT_NE(GradientSlot(i + 1), GradientSlot(i));
      for (int64_t slot : {GradientSlot(i), GradientSlot(i + 1)}) {
        EXPECT_NE(slot, kLocalGradientSlot);
        EXPECT_LT(slot, kRingGradientSlots);
      }
    }
  }
}

TEST(ContextParallelRingTest, RefusesWhatIsNotARing) {
  for (const auto& [c, rank, tokens] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {1, 0, 4}, {2, 2, 4}, {2, -1, 4}, {2, 0, 3}, {2, 0, 0}}) {
    EXPECT_EQ(ContextRingSteps(c, rank, tokens).status().code(), absl::StatusCode::kInvalidArgument)
        << c << " " << rank << " " << tokens;
  }
}

}  // namespace
}  // namespace paratune
