#include "server/core/gang_placement.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

using ::testing::ElementsAre;
using ::testing::FieldsAre;

TEST(NodeSharesTest, WholeNodesThenTheRemainder) {
  EXPECT_THAT(NodeShares(16, 8), ElementsAre(8, 8));
  EXPECT_THAT(NodeShares(12, 8), ElementsAre(8, 4));
  EXPECT_THAT(NodeShares(4, 8), ElementsAre(4));
}

TEST(PlaceGangTest, RequesterAloneWhenTheProbeFitsOneNode) {
  const auto shares = PlaceGang(8, 8, {1, 16}, {{2, 8}});
  ASSERT_TRUE(shares.has_value());
  EXPECT_THAT(*shares, ElementsAre(FieldsAre(1, 0, 8)));
}

TEST(PlaceGangTest, OneNodeSharePerWorkerHoweverLargeTheWorker) {
  // 4 nodes of 4: a 16-GPU worker stands for one node, never for four.
  EXPECT_FALSE(PlaceGang(16, 4, {1, 16}, {}).has_value());
  const auto shares = PlaceGang(16, 4, {1, 16}, {{2, 4}, {3, 8}, {4, 4}});
  ASSERT_TRUE(shares.has_value());
  EXPECT_THAT(*shares, ElementsAre(FieldsAre(1, 0, 4), FieldsAre(2, 4, 4), FieldsAre(4, 8, 4),
                                   FieldsAre(3, 12, 4)));
}

TEST(PlaceGangTest, RequesterThatCannotHoldRankZeroGetsNothing) {
  // The 4-GPU worker asks; a 64-rank probe on nodes of 8 needs 8 GPUs for its first share.
  EXPECT_FALSE(PlaceGang(64, 8, {4, 4}, {{1, 64}}).has_value());
}

TEST(PlaceGangTest, SmallestWorkerThatFitsTakesEachShare) {
  // Shares 8 + 4: the 4-GPU worker takes the remainder, the 8-GPU one stays free.
  const auto shares = PlaceGang(12, 8, {1, 8}, {{2, 8}, {3, 4}});
  ASSERT_TRUE(shares.has_value());
  EXPECT_THAT(*shares, ElementsAre(FieldsAre(1, 0, 8), FieldsAre(3, 8, 4)));
}

TEST(PlaceGangTest, TiesGoToTheLowerWorkerId) {
  const auto shares = PlaceGang(8, 4, {5, 4}, {{3, 4}, {2, 4}});
  ASSERT_TRUE(shares.has_value());
  EXPECT_THAT(*shares, ElementsAre(FieldsAre(5, 0, 4), FieldsAre(2, 4, 4)));
}

TEST(PlaceGangTest, NotEnoughWorkers) {
  EXPECT_FALSE(PlaceGang(24, 8, {1, 8}, {{2, 8}}).has_value());
}

TEST(HostableSharesTest, CountsSharesTheWorkersHoldAtOnce) {
  EXPECT_EQ(HostableShares(16, 4, {{1, 16}}), 1);
  EXPECT_EQ(HostableShares(16, 4, {{1, 16}, {2, 4}, {3, 2}}), 2);
  EXPECT_EQ(HostableShares(12, 8, {{1, 4}, {2, 8}}), 2);
  EXPECT_EQ(HostableShares(12, 8, {{1, 4}, {2, 4}}), 1);
  EXPECT_EQ(HostableShares(8, 8, {}), 0);
}

}  // namespace
}  // namespace paratune
