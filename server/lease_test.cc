#include "server/lease.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

using ::testing::ElementsAre;

v1::Search TwoCandidateSearch() {
  v1::Search search;
  search.set_name("searches/3");
  v1::SearchSpec& spec = *search.mutable_spec();
  spec.mutable_model()->set_preset("llama3.1-8b");
  spec.mutable_cluster()->set_num_nodes(2);
  spec.mutable_probe()->set_backend("command");
  spec.mutable_probe()->set_command_template("megatron-gpt");
  spec.mutable_probe()->set_warmup_steps(2);
  spec.mutable_probe()->set_timed_steps(5);
  spec.mutable_probe()->set_deadline_seconds(300);
  spec.set_seed(9);
  search.add_candidates()->mutable_config()->set_tensor_parallel(1);
  search.add_candidates()->mutable_config()->set_tensor_parallel(4);
  return search;
}

internal::LeaseState GangLease() {
  return MakeLease("searches/3/candidates/1/probes/2", 3, 1, v1::PROBE_SCOPE_REPLICA, 8,
                   {{4, 0, 4}, {6, 4, 4}},
                   {{4, "node-a", {0, 1, 2, 3, 4, 5, 6, 7}}, {6, "node-b", {3, 5, 6, 7}}},
                   1'000);
}

TEST(LeaseTest, MemberAssignmentsDescribeTheWholeGangAndTheirOwnGpus) {
  const internal::LeaseState lease = GangLease();
  const v1::ProbeAssignment second = MemberAssignment(TwoCandidateSearch(), lease, 1);
  EXPECT_EQ(second.name(), "searches/3/candidates/1/probes/2");
  EXPECT_EQ(second.config().tensor_parallel(), 4);
  EXPECT_EQ(second.backend(), "command");
  EXPECT_EQ(second.command_template(), "megatron-gpt");
  EXPECT_EQ(second.scope(), v1::PROBE_SCOPE_REPLICA);
  EXPECT_EQ(second.timed_steps(), 5);
  EXPECT_EQ(second.seed(), 9u);
  EXPECT_EQ(second.num_ranks(), 8);
  EXPECT_EQ(second.gang_index(), 1);
  ASSERT_EQ(second.gang_size(), 2);
  EXPECT_EQ(second.gang(0).worker(), "workers/4");
  EXPECT_EQ(second.gang(0).hostname(), "node-a");
  EXPECT_EQ(second.gang(1).first_rank(), 4);
  // Its first four GPUs by registration order, whatever their indices.
  EXPECT_THAT(second.gpu_indices(), ElementsAre(3, 5, 6, 7));
  EXPECT_THAT(MemberAssignment(TwoCandidateSearch(), lease, 0).gpu_indices(),
              ElementsAre(0, 1, 2, 3));
}

TEST(LeaseTest, MembersAndTheirReports) {
  internal::LeaseState lease = GangLease();
  EXPECT_EQ(MemberIndex(lease, 6), 1);
  EXPECT_EQ(MemberIndex(lease, 5), -1);
  EXPECT_FALSE(AllMembersReported(lease));
  lease.mutable_members(0)->mutable_result()->set_outcome(v1::PROBE_OK);
  EXPECT_FALSE(AllMembersReported(lease));
  lease.mutable_members(1)->mutable_result()->set_outcome(v1::PROBE_OK);
  EXPECT_TRUE(AllMembersReported(lease));
}

}  // namespace
}  // namespace paratune
