#include "worker/probe/rank_layout.h"

#include <map>
#include <set>
#include <vector>

#include "gtest/gtest.h"

namespace paratune {
namespace {

constexpr RankGroup kGroups[] = {
    RankGroup::kTensor,       RankGroup::kContext,     RankGroup::kDataContext,
    RankGroup::kDataShard,    RankGroup::kDataReplica, RankGroup::kPipeline,
    RankGroup::kExpertTensor, RankGroup::kExpert,      RankGroup::kExpertData};

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

void ExpectGroupsPartitionTheWorld(const RankLayout& layout) {
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

TEST(RankLayoutTest, EveryGroupPartitionsTheWorldWithDistinctGroupRanks) {
  ExpectGroupsPartitionTheWorld(RankLayout(/*tp=*/2, /*cp=*/2, /*dp=*/2, /*pp=*/3));
  ExpectGroupsPartitionTheWorld(RankLayout::WithExperts(/*tp=*/2, /*cp=*/2, /*dp=*/2, /*pp=*/3,
                                                        /*etp=*/1, /*ep=*/4));
  ExpectGroupsPartitionTheWorld(RankLayout::WithExperts(/*tp=*/4, /*cp=*/1, /*dp=*/4, /*pp=*/2,
                                                        /*etp=*/2, /*ep=*/4));
  ExpectGroupsPartitionTheWorld(
      RankLayout(/*tp=*/2, /*cp=*/2, /*dp=*/6, /*pp=*/2).WithDataShards(/*dp_shard=*/3));
}

TEST(RankLayoutTest, WithoutHybridShardingTheShardGroupIsTheDataContextGroup) {
  const RankLayout layout(/*tp=*/2, /*cp=*/2, /*dp=*/4, /*pp=*/1);
  EXPECT_FALSE(layout.hybrid());
  EXPECT_EQ(layout.DataShardGroup(), RankGroup::kDataContext);
  EXPECT_EQ(layout.GroupSize(RankGroup::kDataShard), layout.GroupSize(RankGroup::kDataContext));
  EXPECT_EQ(layout.GroupSize(RankGroup::kDataReplica), 1);
}

// Megatron-LM's distributed optimizer instances (parallel_state.py at core_v0.19.0: instance i
// of the data-parallel-with-context ranks [r_0, ..., r_{dp cp - 1}] is r_{i n} .. r_{i n + n - 1},
// n = dp cp / instances) and TorchTitan's dp_replicate outside dp_shard x cp.
TEST(RankLayoutTest, HybridShardsAreRunsOfTheDataContextGroupReplicatedAcrossThem) {
  const RankLayout layout =
      RankLayout(/*tp=*/2, /*cp=*/2, /*dp=*/4, /*pp=*/1).WithDataShards(/*dp_shard=*/2);
  EXPECT_TRUE(layout.hybrid());
  EXPECT_EQ(layout.DataShardGroup(), RankGroup::kDataShard);
  EXPECT_EQ(layout.GroupSize(RankGroup::kDataShard), 4);
  EXPECT_EQ(layout.GroupSize(RankGroup::kDataReplica), 2);
  // tp rank 1's data x context group is 1, 3, 5, ..., 15 (cp + 2 dp in its order): the shard
  // groups are its first four and its last four, the replica groups the pairs four apart.
  for (int64_t rank : {1, 3, 5, 7}) {
    EXPECT_EQ(layout.GroupColor(RankGroup::kDataShard, rank), 1) << rank;
    EXPECT_EQ(layout.GroupRank(RankGroup::kDataShard, rank), (rank - 1) / 2) << rank;
  }
  for (int64_t rank : {9, 11, 13, 15}) {
    EXPECT_EQ(layout.GroupColor(RankGroup::kDataShard, rank), 9) << rank;
    EXPECT_EQ(layout.GroupRank(RankGroup::kDataShard, rank), (rank - 9) / 2) << rank;
  }
  EXPECT_EQ(layout.GroupColor(RankGroup::kDataReplica, 13), 5);
  EXPECT_EQ(layout.GroupRank(RankGroup::kDataReplica, 13), 1);
  EXPECT_EQ(layout.GroupRank(RankGroup::kDataReplica, 5), 0);
  EXPECT_EQ(layout.GroupColor(RankGroup::kDataReplica, 3),
            layout.GroupColor(RankGroup::kDataReplica, 11));
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

TEST(RankLayoutTest, DenseLayoutsHaveMegatronsDefaultExpertGrid) {
  const RankLayout layout(/*tp=*/4, /*cp=*/2, /*dp=*/2, /*pp=*/2);
  EXPECT_FALSE(layout.has_experts());
  EXPECT_EQ(layout.etp(), 4);
  EXPECT_EQ(layout.ep(), 1);
  EXPECT_EQ(layout.edp(), 4);
  EXPECT_TRUE(RankLayout::WithExperts(4, 2, 2, 2, 4, 1).has_experts());
}

// Megatron-LM core_v0.19.0's expert groups, written out: initialize_model_parallel's
// expert_decoder_rank_generator = RankGenerator(tp=etp, ep=ep, dp=edp, pp=pp, cp=1) in order
// "tp-cp-ep-dp-pp" gives rank = etp_i + etp (ep_j + ep (edp_k + edp pp_l)), and a group of one
// axis (generate_masked_orthogonal_rank_groups) holds the ranks that differ in that index only.
std::set<std::set<int64_t>> MegatronExpertGroups(RankGroup group, int64_t etp, int64_t ep,
                                                 int64_t edp, int64_t pp) {
  std::map<std::vector<int64_t>, std::set<int64_t>> groups;
  for (int64_t l = 0; l < pp; ++l) {
    for (int64_t k = 0; k < edp; ++k) {
      for (int64_t j = 0; j < ep; ++j) {
        for (int64_t i = 0; i < etp; ++i) {
          const int64_t rank = i + etp * (j + ep * (k + edp * l));
          std::vector<int64_t> others;
          if (group == RankGroup::kExpertTensor) others = {j, k, l};
          if (group == RankGroup::kExpert) others = {i, k, l};
          if (group == RankGroup::kExpertData) others = {i, j, l};
          groups[others].insert(rank);
        }
      }
    }
  }
  std::set<std::set<int64_t>> result;
  for (const auto& [others, members] : groups) result.insert(members);
  return result;
}

std::set<std::set<int64_t>> GroupsOf(const RankLayout& layout, RankGroup group) {
  std::map<int64_t, std::set<int64_t>> by_color;
  for (int64_t rank = 0; rank < layout.world_size(); ++rank) {
    by_color[layout.GroupColor(group, rank)].insert(rank);
  }
  std::set<std::set<int64_t>> result;
  for (const auto& [color, members] : by_color) result.insert(members);
  return result;
}

TEST(RankLayoutTest, ExpertGroupsAreMegatronsExpertGrid) {
  struct Case {
    int64_t tp, cp, dp, pp, etp, ep;
  };
  for (const Case& c : {Case{2, 2, 2, 2, 1, 4}, Case{4, 1, 4, 2, 2, 4}, Case{2, 1, 8, 1, 1, 8},
                        Case{8, 2, 1, 3, 8, 2}, Case{1, 4, 2, 1, 1, 2}}) {
    const RankLayout layout = RankLayout::WithExperts(c.tp, c.cp, c.dp, c.pp, c.etp, c.ep);
    const int64_t edp = c.tp * c.cp * c.dp / (c.etp * c.ep);
    ASSERT_EQ(layout.edp(), edp);
    for (RankGroup group : {RankGroup::kExpertTensor, RankGroup::kExpert, RankGroup::kExpertData}) {
      EXPECT_EQ(GroupsOf(layout, group), MegatronExpertGroups(group, c.etp, c.ep, edp, c.pp))
          << RankGroupName(group) << " of tp" << c.tp << " cp" << c.cp << " dp" << c.dp << " pp"
          << c.pp << " etp" << c.etp << " ep" << c.ep;
    }
    // Both grids share the pipeline groups: a rank's expert groups stay in its stage.
    for (int64_t rank = 0; rank < layout.world_size(); ++rank) {
      EXPECT_EQ(layout.CoordinatesOf(layout.GroupColor(RankGroup::kExpertData, rank)).pp,
                layout.CoordinatesOf(rank).pp);
    }
  }
}

TEST(RankLayoutTest, ExpertGridFoldsTheStagesRanksExpertTensorFastest) {
  // tp 2, dp 4, etp 1, ep 4 (edp 2): stage ranks 0..7 are ep groups {0..3} and {4..7}; the
  // expert data group of rank 5 is {1, 5}.
  const RankLayout layout = RankLayout::WithExperts(2, 1, 4, 2, 1, 4);
  const ExpertCoordinates c = layout.ExpertCoordinatesOf(8 + 5);
  EXPECT_EQ(c.etp, 0);
  EXPECT_EQ(c.ep, 1);
  EXPECT_EQ(c.edp, 1);
  EXPECT_EQ(layout.GroupColor(RankGroup::kExpert, 5), 4);
  EXPECT_EQ(layout.GroupRank(RankGroup::kExpert, 5), 1);
  EXPECT_EQ(layout.GroupColor(RankGroup::kExpertData, 5), 1);
  EXPECT_EQ(layout.GroupRank(RankGroup::kExpertData, 5), 1);
  EXPECT_EQ(layout.GroupColor(RankGroup::kExpert, 8 + 5), 8 + 4);
  EXPECT_STREQ(RankGroupName(RankGroup::kExpertData), "edp");
}

}  // namespace
}  // namespace paratune
