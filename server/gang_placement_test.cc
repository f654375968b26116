#include "server/gang_placement.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

using ::testing::ElementsAre;
using ::testing::FieldsAre;

TEST(PlaceGangTest, RequesterAloneWhenItHasTheGpus) {
  const auto shares = PlaceGang(8, 2, {1, 16}, {{2, 8}});
  ASSERT_TRUE(shares.has_value());
  EXPECT_THAT(*shares, ElementsAre(FieldsAre(1, 0, 8)));
}

TEST(PlaceGangTest, SpreadsOverTheLargestOthersInWholeGroups) {
  // tp x cp = 4: a 6-GPU worker holds one group of 4, a 4-GPU worker one.
  const auto shares = PlaceGang(12, 4, {1, 4}, {{2, 4}, {3, 6}, {4, 8}});
  ASSERT_TRUE(shares.has_value());
  EXPECT_THAT(*shares, ElementsAre(FieldsAre(1, 0, 4), FieldsAre(4, 4, 8)));
}

TEST(PlaceGangTest, TiesGoToTheLowerWorkerId) {
  const auto shares = PlaceGang(8, 4, {5, 4}, {{3, 4}, {2, 4}});
  ASSERT_TRUE(shares.has_value());
  EXPECT_THAT(*shares, ElementsAre(FieldsAre(5, 0, 4), FieldsAre(2, 4, 4)));
}

TEST(PlaceGangTest, WorkersSmallerThanAGroupAreSkipped) {
  const auto shares = PlaceGang(8, 4, {1, 2}, {{2, 4}, {3, 4}});
  ASSERT_TRUE(shares.has_value());
  EXPECT_THAT(*shares, ElementsAre(FieldsAre(2, 0, 4), FieldsAre(3, 4, 4)));
}

TEST(PlaceGangTest, NulloptWhenTheWorkersCannotHoldTheRanks) {
  EXPECT_FALSE(PlaceGang(8, 4, {1, 4}, {{2, 3}}).has_value());
  EXPECT_FALSE(PlaceGang(16, 8, {1, 4}, {{2, 4}, {3, 4}, {4, 4}}).has_value());
}

TEST(GangCapacityTest, CountsWholeGroups) {
  EXPECT_EQ(GangCapacity(4, {{1, 6}, {2, 4}, {3, 3}}), 8);
  EXPECT_EQ(GangCapacity(1, {{1, 6}, {2, 4}, {3, 3}}), 13);
  EXPECT_EQ(GangCapacity(2, {}), 0);
}

}  // namespace
}  // namespace paratune
