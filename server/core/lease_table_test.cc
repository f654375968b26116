#include "server/core/lease_table.h"

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

internal::LeaseState Lease(const std::string& probe, int64_t search_id, int64_t candidate,
                           std::vector<int64_t> workers, absl::Time expires) {
  internal::LeaseState lease;
  lease.set_probe(probe);
  lease.set_search_id(search_id);
  lease.set_candidate(candidate);
  lease.set_expires_unix_nanos(absl::ToUnixNanos(expires));
  for (int64_t worker : workers) lease.add_members()->set_worker_id(worker);
  return lease;
}

v1::ProbeResult Ok(double tflops) {
  v1::ProbeResult result;
  result.set_outcome(v1::PROBE_OK);
  result.set_model_tflops_per_gpu(tflops);
  return result;
}

TEST(LeaseTableTest, MembershipAndItsRefusal) {
  LeaseTable leases;
  leases.Add(Lease("searches/1/candidates/0/probes/1", 1, 0, {3, 4}, absl::UnixEpoch()));
  auto membership = leases.FindMembership("searches/1/candidates/0/probes/1", 4, "workers/4");
  ASSERT_TRUE(membership.ok());
  EXPECT_EQ(membership->second, 1);
  const absl::Status refused =
      leases.FindMembership("searches/1/candidates/0/probes/1", 5, "workers/5").status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.message(), HasSubstr("is not leased to workers/5"));
}

TEST(LeaseTableTest, OverdueSearchLeasesAndEnd) {
  LeaseTable leases;
  const absl::Time now = absl::FromUnixSeconds(100);
  leases.Add(Lease("searches/1/candidates/1/probes/1", 1, 1, {1}, now - absl::Seconds(1)));
  leases.Add(Lease("searches/1/candidates/0/probes/2", 1, 0, {2}, now + absl::Seconds(1)));
  leases.Add(Lease("searches/2/candidates/0/probes/1", 2, 0, {3}, now - absl::Seconds(5)));
  EXPECT_THAT(leases.Overdue(now),
              ElementsAre("searches/1/candidates/1/probes/1", "searches/2/candidates/0/probes/1"));
  EXPECT_THAT(leases.OfSearch(1),
              ElementsAre("searches/1/candidates/0/probes/2", "searches/1/candidates/1/probes/1"));
  EXPECT_TRUE(leases.IsLeased(1, 0));
  const internal::LeaseState ended = leases.End("searches/1/candidates/0/probes/2");
  EXPECT_EQ(ended.candidate(), 0);
  EXPECT_FALSE(leases.IsLeased(1, 0));
  EXPECT_EQ(leases.size(), 2);
}

TEST(LeaseTableTest, RepeatedReportsAreRecognisedOnlyWhenIdentical) {
  LeaseTable leases;
  leases.RememberReport("searches/1/candidates/0/probes/1", 3, Ok(400));
  EXPECT_TRUE(leases.IsRepeatedReport("searches/1/candidates/0/probes/1", 3, Ok(400)));
  EXPECT_FALSE(leases.IsRepeatedReport("searches/1/candidates/0/probes/1", 3, Ok(401)));
  EXPECT_FALSE(leases.IsRepeatedReport("searches/1/candidates/0/probes/1", 4, Ok(400)));
  EXPECT_FALSE(leases.IsRepeatedReport("searches/1/candidates/0/probes/2", 3, Ok(400)));
}

TEST(LeaseTableTest, OldestReportsAreForgottenFirst) {
  LeaseTable leases;
  for (size_t i = 0; i <= LeaseTable::kRememberedReports; ++i) {
    leases.RememberReport(absl::StrCat("searches/1/candidates/", i, "/probes/1"), 1, Ok(1));
  }
  EXPECT_FALSE(leases.IsRepeatedReport("searches/1/candidates/0/probes/1", 1, Ok(1)));
  EXPECT_TRUE(leases.IsRepeatedReport("searches/1/candidates/1/probes/1", 1, Ok(1)));
}

}  // namespace
}  // namespace paratune
