// End to end, the failures the scheduler must survive (DESIGN.md §7): the server killed with
// kill -9 mid-search and restarted on its database, a worker killed mid-probe, and two
// searches sharing the fleet.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/autotuner_service.grpc.pb.h"
#include "proto/worker.pb.h"
#include "tests/test_cluster.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;

constexpr absl::Duration kRpcTimeout = absl::Seconds(30);
constexpr absl::Duration kSearchTimeout = absl::Seconds(120);

std::vector<std::string> SimWorker(const std::string& probe_seconds) {
  return {"--backend=sim", "--sim_gpus=8", "--sim_gpu_type=h100-80gb",
          absl::StrCat("--sim_probe_seconds=", probe_seconds)};
}

// Creates the search; fails the test if the call fails.
v1::Search Create(TestCluster& cluster, const v1::CreateSearchRequest& request) {
  absl::StatusOr<v1::Search> created = cluster.CreateSearch(request);
  EXPECT_TRUE(created.ok()) << created.status();
  return created.ok() ? *std::move(created) : v1::Search();
}

// WaitForSearch for at most kSearchTimeout; fails the test on a timeout.
v1::Search WaitFor(TestCluster& cluster, const std::string& name,
                   const std::function<bool(const v1::Search&)>& done) {
  absl::StatusOr<v1::Search> search = cluster.WaitForSearch(name, done, kSearchTimeout);
  EXPECT_TRUE(search.ok()) << search.status();
  return search.ok() ? *std::move(search) : v1::Search();
}

std::string DatabasePath(const std::string& name) {
  const std::string path = absl::StrCat(::testing::TempDir(), "/", name);
  for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
  return path;
}

TEST(E2eRecoveryTest, ServerKilledMidSearchResumesAndLosesNoResult) {
  TestCluster::Options options;
  options.db_path = DatabasePath("kill9.db");
  // Probes long enough that both workers are mid-probe when the server dies.
  absl::StatusOr<std::unique_ptr<TestCluster>> cluster =
      TestCluster::Start({SimWorker("0.6"), SimWorker("0.6")}, options);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  const v1::Search created = Create(**cluster, SmallSimSearch(6));

  const v1::Search before = WaitFor(**cluster, created.name(), [](const v1::Search& search) {
    return search.counts().probed() >= 2;
  });
  std::map<std::string, std::string> results_before;
  for (const v1::Candidate& candidate : before.candidates()) {
    if (candidate.state() == v1::CANDIDATE_PROBED) {
      results_before[candidate.name()] = candidate.probe_result().SerializeAsString();
    }
  }
  (*cluster)->KillServer();
  std::fprintf(stderr, "e2e: killed the server (kill -9) after %zu results\n",
               results_before.size());
  ASSERT_TRUE((*cluster)->RestartServer().ok());

  absl::StatusOr<v1::Search> done = (*cluster)->WaitUntilEnded(created.name(), kSearchTimeout);
  ASSERT_TRUE(done.ok()) << done.status();
  std::fprintf(stderr, "e2e: after the restart: %s, %s\n",
               v1::SearchState_Name(done->state()).c_str(), done->stop_reason().c_str());
  EXPECT_EQ(done->state(), v1::SUCCEEDED) << done->stop_reason();
  EXPECT_EQ(done->counts().probed(), 6);
  EXPECT_EQ(done->counts().succeeded(), 6);
  for (const v1::Candidate& candidate : done->candidates()) {
    // Reported before the kill: kept as it was.
    if (auto it = results_before.find(candidate.name()); it != results_before.end()) {
      EXPECT_EQ(candidate.probe_result().SerializeAsString(), it->second) << candidate.name();
    }
    // Running at the kill: reported to the restarted server, not run again. Leased but with
    // the AcquireProbe reply cut off by the kill: handed to the same worker again, under the
    // same lease. Either way no candidate is leased twice.
    EXPECT_EQ(candidate.attempts(), 1) << candidate.name() << " was leased again";
  }
  absl::StatusOr<std::vector<v1::SearchEvent>> events = (*cluster)->Events(created.name());
  ASSERT_TRUE(events.ok()) << events.status();
  EXPECT_EQ(
      std::count_if(events->begin(), events->end(),
                    [](const v1::SearchEvent& event) { return event.kind() == v1::EVENT_RESUMED; }),
      1);
}

TEST(E2eRecoveryTest, ProbeOfAKilledWorkerRunsOnAnother) {
  // The first worker's probes take long enough to be killed mid-probe.
  absl::StatusOr<std::unique_ptr<TestCluster>> cluster =
      TestCluster::Start({SimWorker("30"), SimWorker("0.05")});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  v1::ListWorkersResponse workers;
  ASSERT_TRUE((*cluster)
                  ->autotuner()
                  .ListWorkers(ContextWithTimeout(kRpcTimeout).get(), {}, &workers)
                  .ok());
  std::string slow;
  for (const v1::Worker& worker : workers.workers()) {
    if (worker.hostname() == "test-worker-0") slow = worker.name();
  }
  ASSERT_FALSE(slow.empty());

  const v1::Search created = Create(**cluster, SmallSimSearch(3));
  std::string victim;
  WaitFor(**cluster, created.name(), [&](const v1::Search& search) {
    for (const v1::Candidate& candidate : search.candidates()) {
      if (candidate.state() == v1::CANDIDATE_RUNNING && candidate.worker() == slow) {
        victim = candidate.name();
      }
    }
    return !victim.empty();
  });
  ASSERT_FALSE(victim.empty());
  (*cluster)->KillWorker(0);

  absl::StatusOr<v1::Search> done = (*cluster)->WaitUntilEnded(created.name(), kSearchTimeout);
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->state(), v1::SUCCEEDED) << done->stop_reason();
  EXPECT_EQ(done->counts().succeeded(), 3);
  for (const v1::Candidate& candidate : done->candidates()) {
    if (candidate.name() != victim) continue;
    EXPECT_EQ(candidate.attempts(), 2);
    EXPECT_NE(candidate.worker(), slow);
    EXPECT_EQ(candidate.probe_result().outcome(), v1::PROBE_OK);
  }
  bool requeued = false;
  absl::StatusOr<std::vector<v1::SearchEvent>> events = (*cluster)->Events(created.name());
  ASSERT_TRUE(events.ok()) << events.status();
  for (const v1::SearchEvent& event : *events) {
    requeued |= event.kind() == v1::EVENT_WORKER_LOST && event.workers_size() == 1 &&
                event.workers(0).worker() == slow &&
                absl::StrContains(event.reason(), "no heartbeat");
  }
  EXPECT_TRUE(requeued);
}

TEST(E2eRecoveryTest, TwoConcurrentSearchesShareTheFleetAndBothFinish) {
  absl::StatusOr<std::unique_ptr<TestCluster>> cluster =
      TestCluster::Start({SimWorker("0.1"), SimWorker("0.1")});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  const v1::Search first = Create(**cluster, SmallSimSearch(6));
  const v1::Search second = Create(**cluster, SmallSimSearch(6));
  absl::StatusOr<v1::Search> first_done = (*cluster)->WaitUntilEnded(first.name(), kSearchTimeout);
  absl::StatusOr<v1::Search> second_done =
      (*cluster)->WaitUntilEnded(second.name(), kSearchTimeout);
  ASSERT_TRUE(first_done.ok() && second_done.ok());
  EXPECT_EQ(first_done->state(), v1::SUCCEEDED);
  EXPECT_EQ(second_done->state(), v1::SUCCEEDED);
  EXPECT_EQ(first_done->counts().succeeded(), 6);
  EXPECT_EQ(second_done->counts().succeeded(), 6);

  // Fair sharing: the second search's first probe was leased before the first search
  // finished, rather than after all of it.
  v1::ListSearchEventsRequest request;
  request.set_page_size(1000);
  auto sequences = [&](const std::string& name, v1::SearchEventKind kind) {
    request.set_name(name);
    v1::ListSearchEventsResponse response;
    EXPECT_TRUE((*cluster)
                    ->autotuner()
                    .ListSearchEvents(ContextWithTimeout(kRpcTimeout).get(), request, &response)
                    .ok());
    std::vector<int64_t> found;
    for (const v1::SearchEvent& event : response.events()) {
      if (event.kind() == kind) found.push_back(event.sequence());
    }
    return found;
  };
  const std::vector<int64_t> second_leases = sequences(second.name(), v1::EVENT_LEASED);
  const std::vector<int64_t> first_end = sequences(first.name(), v1::EVENT_STOPPED);
  ASSERT_FALSE(second_leases.empty());
  ASSERT_EQ(first_end.size(), 1u);
  EXPECT_LT(second_leases.front(), first_end.front());
}

}  // namespace
}  // namespace paratune

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (!paratune::SetTestBinaries(argc, argv)) {
    std::fprintf(stderr, "usage: e2e_recovery_test PARATUNE_SERVER PARATUNE_WORKER\n");
    return 2;
  }
  return RUN_ALL_TESTS();
}
