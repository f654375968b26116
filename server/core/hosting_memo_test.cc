#include "server/core/hosting_memo.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/core/launch_target.h"
#include "server/core/test_requests.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;

const absl::Time kNow = absl::FromUnixSeconds(1000);

ProbeNeeds Needs(const std::string& probe, int64_t ranks) {
  ProbeNeeds needs;
  needs.probe = probe;
  needs.kind.backend = "sim";
  needs.kind.gpu_type = "h100-80gb";
  needs.gpus_per_node = 8;
  needs.ranks = ranks;
  return needs;
}

TEST(HostingMemoTest, AnswersAsTheRegistryForEveryNeed) {
  WorkerRegistry workers;
  workers.Add(Worker(8), kNow);
  workers.Add(Worker(8), kNow);
  HostingMemo hosting(workers);
  for (int64_t ranks : {8, 16, 24, 16, 8}) {
    const ProbeNeeds needs = Needs("searches/1/candidates/0/probes/1", ranks);
    EXPECT_EQ(hosting.WhyUnplaceable(needs), workers.WhyUnplaceable(needs)) << ranks;
    EXPECT_EQ(hosting.CanHost(needs), workers.CanHost(needs)) << ranks;
  }
  EXPECT_THAT(hosting.WhyUnplaceable(Needs("searches/1/candidates/1/probes/1", 24)),
              HasSubstr("they can host 2 of its 3 node shares"));
}

// Probes that differ only in their shard group share a count, but each reason names its own.
TEST(HostingMemoTest, EachReasonNamesItsOwnShardGroup) {
  WorkerRegistry workers;
  workers.Add(Worker(8), kNow);
  HostingMemo hosting(workers);
  ProbeNeeds whole = Needs("searches/1/candidates/0/probes/1", 16);
  whole.shard_group = ShardGroup{DataParallelSharding::kFull, 16, 16};
  ProbeNeeds hybrid = Needs("searches/1/candidates/1/probes/1", 16);
  hybrid.shard_group = ShardGroup{DataParallelSharding::kFull, 8, 16};
  EXPECT_EQ(hosting.WhyUnplaceable(whole), workers.WhyUnplaceable(whole));
  EXPECT_EQ(hosting.WhyUnplaceable(hybrid), workers.WhyUnplaceable(hybrid));
  EXPECT_THAT(hosting.WhyUnplaceable(hybrid), HasSubstr("shards within groups of 8"));
}

// Workers reserved for one probe host that probe only: two probes with equal needs differ.
TEST(HostingMemoTest, AProbeWithReservedWorkersIsAnsweredOnItsOwn) {
  WorkerRegistry workers;
  const std::string reserved = "searches/1/candidates/0/probes/1";
  const std::string other = "searches/1/candidates/1/probes/1";
  workers.Add(Worker(8), kNow).worker.mutable_labels()->insert({kProbeReservationLabel, reserved});
  HostingMemo hosting(workers);
  EXPECT_TRUE(hosting.CanHost(Needs(reserved, 8)));
  EXPECT_FALSE(hosting.CanHost(Needs(other, 8)));
  EXPECT_TRUE(hosting.CanHost(Needs(reserved, 8)));
  EXPECT_EQ(hosting.WhyUnplaceable(Needs(other, 8)), workers.WhyUnplaceable(Needs(other, 8)));
}

}  // namespace
}  // namespace paratune
