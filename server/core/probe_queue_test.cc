#include "server/core/probe_queue.h"

#include <vector>

#include "gtest/gtest.h"

namespace paratune {
namespace {

using Item = ProbeQueue::Item;

bool Any(const Item&) { return true; }

TEST(ProbeQueueTest, TakesTurnsBetweenSearches) {
  ProbeQueue queue;
  queue.Push({1, 0});
  queue.Push({1, 1});
  queue.Push({1, 2});
  queue.Push({2, 0});
  queue.Push({2, 1});
  std::vector<Item> order;
  while (std::optional<Item> item = queue.PopFirstFitting(Any)) order.push_back(*item);
  EXPECT_EQ(order, (std::vector<Item>{{1, 0}, {2, 0}, {1, 1}, {2, 1}, {1, 2}}));
  EXPECT_EQ(queue.size(), 0);
}

TEST(ProbeQueueTest, SkipsWhatDoesNotFitWithoutLosingIt) {
  ProbeQueue queue;
  queue.Push({1, 0});
  queue.Push({1, 1});
  queue.Push({2, 0});
  const auto odd_candidates = [](const Item& item) { return item.candidate % 2 == 1; };
  EXPECT_EQ(queue.PopFirstFitting(odd_candidates), (Item{1, 1}));
  const auto nothing = [](const Item&) { return false; };
  EXPECT_EQ(queue.PopFirstFitting(nothing), std::nullopt);
  EXPECT_EQ(queue.size(), 2);
  // Search 1 took the last turn, so search 2 goes first.
  EXPECT_EQ(queue.PopFirstFitting(Any), (Item{2, 0}));
  EXPECT_EQ(queue.PopFirstFitting(Any), (Item{1, 0}));
}

TEST(ProbeQueueTest, RemoveSearchDropsOnlyItsItems) {
  ProbeQueue queue;
  queue.Push({1, 0});
  queue.Push({2, 0});
  queue.Push({1, 1});
  EXPECT_EQ(queue.RemoveSearch(1), 2);
  EXPECT_EQ(queue.RemoveSearch(1), 0);
  EXPECT_EQ(queue.size(), 1);
  EXPECT_EQ(queue.PopFirstFitting(Any), (Item{2, 0}));
}

TEST(ProbeQueueTest, RemoveDropsOneItemAndKeepsTheTurns) {
  ProbeQueue queue;
  queue.Push({1, 0});
  queue.Push({2, 0});
  queue.Push({1, 1});
  queue.Push({3, 0});
  EXPECT_TRUE(queue.Remove({1, 0}));
  EXPECT_FALSE(queue.Remove({1, 0}));
  EXPECT_TRUE(queue.Remove({3, 0}));
  EXPECT_EQ(queue.size(), 2);
  // Search 1 keeps its turn ahead of search 2.
  EXPECT_EQ(queue.PopFirstFitting(Any), (Item{1, 1}));
  EXPECT_EQ(queue.PopFirstFitting(Any), (Item{2, 0}));
  EXPECT_EQ(queue.PopFirstFitting(Any), std::nullopt);
}

}  // namespace
}  // namespace paratune
