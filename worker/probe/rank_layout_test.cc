#include "worker/probe/rank_layout.h"

#include <map>
#include <set>

#include "gtest/gtest.h"

namespace paratune {
namespace {

constexpr RankGroup kGroups[] = {RankGroup::kTensor, RankGroup::kContext, RankGroup::kDataContext,
                                 RankGroup::kPipeline};

TEST(RankLayoutTest, TensorIsFastestThenContextDataPipeline) {
  const RankLayout layout(/*tp=*/2, /*cp=*/2, /*dp=*/3, /*pp=*/2);
  ASSERT_EQ(layout.world_size(), 24);
  // Megatron-LM: rank = tp + t (cp + c (dp + d pp)).
  const RankCoordinates c = layout.CoordinatesOf(1 + 2 * (1 + 2 * (2 + 3 * 1)));
  EXPECT_EQ(c.tp, 1);
  EXPECT_EQ(c.cp, 1);
  EXPECT_EQ(c.dp, 2);
  EXPECT_EQ(c.pp, 1);
  for (int64_t rank = 0; rank < layout.world_size(); ++rank) {
    EXPECT_EQ(layout.RankOf(layout.CoordinatesOf(rank)), rank);
  }
}

TEST(RankLayoutTest, EveryGroupPartitionsTheWorldWithDistinctGroupRanks) {
  const RankLayout layout(/*tp=*/2, /*cp=*/2, /*dp=*/2, /*pp=*/3);
  for (RankGroup group : kGroups) {
    std::map<int64_t, std::set<int64_t>> ranks_by_color;
    for (int64_t rank = 0; rank < layout.world_size(); ++rank) {
      const int64_t color = layout.GroupColor(group, rank);
      EXPECT_GE(color, 0);
      const int64_t group_rank = layout.GroupRank(group, rank);
      EXPECT_GE(group_rank, 0);
      EXPECT_LT(group_rank, layout.GroupSize(group));
      EXPECT_TRUE(ranks_by_color[color].insert(group_rank).second)
          << RankGroupName(group) << ": two ranks share group rank " << group_rank;
    }
    EXPECT_EQ(static_cast<int64_t>(ranks_by_color.size()),
              layout.world_size() / layout.GroupSize(group))
        << RankGroupName(group);
    for (const auto& [color, members] : ranks_by_color) {
      EXPECT_EQ(static_cast<int64_t>(members.size()), layout.GroupSize(group));
    }
  }
}

TEST(RankLayoutTest, GroupsHoldTheRanksThatDifferOnlyInTheirAxes) {
  const RankLayout layout(/*tp=*/2, /*cp=*/2, /*dp=*/2, /*pp=*/2);
  // Ranks 0 and 1 differ in tp only; 0 and 2 in cp only; 0 and 4 in dp; 0 and 8 in pp.
  EXPECT_EQ(layout.GroupColor(RankGroup::kTensor, 0), layout.GroupColor(RankGroup::kTensor, 1));
  EXPECT_NE(layout.GroupColor(RankGroup::kTensor, 0), layout.GroupColor(RankGroup::kTensor, 2));
  EXPECT_EQ(layout.GroupColor(RankGroup::kContext, 0), layout.GroupColor(RankGroup::kContext, 2));
  EXPECT_EQ(layout.GroupColor(RankGroup::kDataContext, 0),
            layout.GroupColor(RankGroup::kDataContext, 6));
  EXPECT_EQ(layout.GroupRank(RankGroup::kDataContext, 6), 3);
  EXPECT_NE(layout.GroupColor(RankGroup::kDataContext, 0),
            layout.GroupColor(RankGroup::kDataContext, 1));
  EXPECT_EQ(layout.GroupColor(RankGroup::kPipeline, 0), layout.GroupColor(RankGroup::kPipeline, 8));
  EXPECT_EQ(layout.GroupRank(RankGroup::kPipeline, 8), 1);
}

}  // namespace
}  // namespace paratune
