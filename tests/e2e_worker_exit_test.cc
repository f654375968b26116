// End to end, a worker that leaves (issue 10, item 5): SIGTERM or SIGINT make paratune-worker
// deregister before it exits, so the server lists it no more, leases it nothing and
// re-queues its running probe at once; a worker started with --exit_after_probes leaves no
// lost worker behind.
#include <signal.h>

#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/autotuner_service.grpc.pb.h"
#include "proto/worker.pb.h"
#include "server/core/test_requests.h"
#include "tests/process_harness.h"
#include "tests/test_cluster.h"

namespace paratune {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

// Bounds every poll below; the waits end as soon as their condition holds.
constexpr absl::Duration kWaitTimeout = absl::Seconds(60);
// Longer than the tests wait: a probe that is still running when the worker stops.
constexpr char kLongProbeSeconds[] = "600";

std::string& WorkerBinary() {
  static std::string* const path = new std::string();
  return *path;
}

std::unique_ptr<ChildProcess> StartWorker(const TestCluster& cluster, const std::string& hostname,
                                          const std::vector<std::string>& flags) {
  std::vector<std::string> argv = {WorkerBinary(),
                                   absl::StrCat("--server=", cluster.address()),
                                   absl::StrCat("--hostname=", hostname),
                                   "--backend=sim",
                                   "--sim_gpus=8",
                                   "--sim_gpu_type=h100-80gb"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  absl::StatusOr<std::unique_ptr<ChildProcess>> worker = ChildProcess::Spawn(argv);
  EXPECT_TRUE(worker.ok()) << worker.status();
  return worker.ok() ? *std::move(worker) : nullptr;
}

std::vector<v1::Worker> ListWorkers(TestCluster& cluster) {
  absl::StatusOr<std::vector<v1::Worker>> workers = cluster.ListWorkers();
  EXPECT_TRUE(workers.ok()) << workers.status();
  return workers.ok() ? *std::move(workers) : std::vector<v1::Worker>();
}

// Polls ListWorkers until a worker registered with `hostname`; its name, or empty (a test
// failure) when none did in time or the process exited first.
std::string WaitForWorker(TestCluster& cluster, const std::string& hostname,
                          ChildProcess& process) {
  const absl::Time give_up = absl::Now() + kWaitTimeout;
  while (absl::Now() < give_up) {
    for (const v1::Worker& worker : ListWorkers(cluster)) {
      if (worker.hostname() == hostname) return worker.name();
    }
    if (std::optional<int> status = process.Poll(); status.has_value()) {
      ADD_FAILURE() << hostname << " exited (" << DescribeExitStatus(*status)
                    << ") before registering";
      return "";
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  ADD_FAILURE() << hostname << " did not register within " << kWaitTimeout;
  return "";
}

// Waits up to kWaitTimeout for the process to exit by itself; then ends it (SIGTERM, then
// SIGKILL) and returns its waitpid status.
int WaitForExit(ChildProcess& process) {
  const absl::Time give_up = absl::Now() + kWaitTimeout;
  while (!process.Poll().has_value() && absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  return process.Terminate(absl::ZeroDuration());
}

v1::Search CreateSearch(TestCluster& cluster, const v1::CreateSearchRequest& request) {
  absl::StatusOr<v1::Search> created = cluster.CreateSearch(request);
  EXPECT_TRUE(created.ok()) << created.status();
  return created.ok() ? *std::move(created) : v1::Search();
}

// Polls GetSearch until its only candidate satisfies `done`, for at most kWaitTimeout; the
// last search seen.
v1::Search WaitForCandidate(TestCluster& cluster, const std::string& name,
                            const std::function<bool(const v1::Candidate&)>& done) {
  absl::StatusOr<v1::Search> search = cluster.WaitForSearch(
      name,
      [&](const v1::Search& search) {
        return search.candidates_size() == 1 && done(search.candidates(0));
      },
      kWaitTimeout);
  EXPECT_TRUE(search.ok()) << search.status();
  return search.ok() ? *std::move(search) : v1::Search();
}

bool QueuedForWantOfWorkers(const v1::Candidate& candidate) {
  return candidate.state() == v1::CANDIDATE_QUEUED && !candidate.waiting_reason().empty();
}

// The reasons of the search's re-queues, in order.
std::vector<std::string> RequeueReasons(TestCluster& cluster, const std::string& name) {
  absl::StatusOr<std::vector<v1::SearchEvent>> events = cluster.Events(name);
  EXPECT_TRUE(events.ok()) << events.status();
  std::vector<std::string> reasons;
  for (const v1::SearchEvent& event : events.ok() ? *events : std::vector<v1::SearchEvent>()) {
    if (event.kind() == v1::EVENT_REQUEUED) reasons.push_back(event.reason());
  }
  return reasons;
}

class E2eWorkerExitSignalTest : public ::testing::TestWithParam<int> {};

TEST_P(E2eWorkerExitSignalTest, StoppedWorkerLeavesTheServerAndIsLeasedNothing) {
  absl::StatusOr<std::unique_ptr<TestCluster>> cluster = TestCluster::Start({});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  std::unique_ptr<ChildProcess> worker = StartWorker(**cluster, "leaving-worker", {});
  ASSERT_NE(worker, nullptr);
  ASSERT_THAT(WaitForWorker(**cluster, "leaving-worker", *worker), Not(IsEmpty()));

  ASSERT_EQ(kill(worker->pid(), GetParam()), 0);
  EXPECT_EQ(DescribeExitStatus(WaitForExit(*worker)), "exit code 0");

  // It deregistered before exiting: no IDLE worker the server would lease to, no LOST one.
  EXPECT_THAT(ListWorkers(**cluster), IsEmpty());
  const v1::Search created = CreateSearch(**cluster, SmallSimSearch(1));
  ASSERT_EQ(created.state(), v1::PROBING) << created.stop_reason();
  const v1::Search search = WaitForCandidate(**cluster, created.name(), QueuedForWantOfWorkers);
  ASSERT_EQ(search.candidates_size(), 1);
  EXPECT_EQ(search.candidates(0).state(), v1::CANDIDATE_QUEUED);
  EXPECT_EQ(search.candidates(0).attempts(), 0);
  EXPECT_THAT(search.candidates(0).worker(), IsEmpty());
}

INSTANTIATE_TEST_SUITE_P(Signals, E2eWorkerExitSignalTest, ::testing::Values(SIGTERM, SIGINT),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::string(info.param == SIGTERM ? "Sigterm" : "Sigint");
                         });

TEST(E2eWorkerExitTest, SigtermHandsTheRunningProbeBackAtOnce) {
  absl::StatusOr<std::unique_ptr<TestCluster>> cluster = TestCluster::Start({});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  std::unique_ptr<ChildProcess> slow = StartWorker(
      **cluster, "slow-worker", {absl::StrCat("--sim_probe_seconds=", kLongProbeSeconds)});
  ASSERT_NE(slow, nullptr);
  const std::string slow_name = WaitForWorker(**cluster, "slow-worker", *slow);
  ASSERT_THAT(slow_name, Not(IsEmpty()));
  const v1::Search created = CreateSearch(**cluster, SmallSimSearch(1));
  ASSERT_EQ(created.state(), v1::PROBING) << created.stop_reason();
  WaitForCandidate(**cluster, created.name(), [&](const v1::Candidate& candidate) {
    return candidate.state() == v1::CANDIDATE_RUNNING && candidate.worker() == slow_name;
  });

  // The worker exits without waiting for its probe, and the probe is queued again at once
  // rather than when the server would have declared the worker lost.
  ASSERT_EQ(kill(slow->pid(), SIGTERM), 0);
  EXPECT_EQ(DescribeExitStatus(WaitForExit(*slow)), "exit code 0");
  EXPECT_THAT(ListWorkers(**cluster), IsEmpty());
  WaitForCandidate(**cluster, created.name(), QueuedForWantOfWorkers);
  EXPECT_THAT(RequeueReasons(**cluster, created.name()),
              Contains(HasSubstr("paratune-worker received SIGTERM")));

  // Another worker runs the next attempt.
  std::unique_ptr<ChildProcess> fast =
      StartWorker(**cluster, "fast-worker", {"--sim_probe_seconds=0"});
  ASSERT_NE(fast, nullptr);
  const std::string fast_name = WaitForWorker(**cluster, "fast-worker", *fast);
  absl::StatusOr<v1::Search> ended = (*cluster)->WaitUntilEnded(created.name(), kWaitTimeout);
  ASSERT_TRUE(ended.ok()) << ended.status();
  EXPECT_EQ(ended->state(), v1::SUCCEEDED) << ended->stop_reason();
  ASSERT_EQ(ended->candidates_size(), 1);
  EXPECT_EQ(ended->candidates(0).probe_result().outcome(), v1::PROBE_OK);
  EXPECT_EQ(ended->candidates(0).worker(), fast_name);
  EXPECT_EQ(ended->candidates(0).attempts(), 2);
}

TEST(E2eWorkerExitTest, ExitAfterProbesLeavesNoLostWorker) {
  absl::StatusOr<std::unique_ptr<TestCluster>> cluster = TestCluster::Start({});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  const v1::Search created = CreateSearch(**cluster, SmallSimSearch(1));
  ASSERT_EQ(created.state(), v1::PROBING) << created.stop_reason();

  // As a Slurm job's worker runs: one probe, then it exits by itself.
  std::unique_ptr<ChildProcess> worker = StartWorker(
      **cluster, "one-probe-worker", {"--sim_probe_seconds=0", "--exit_after_probes=1"});
  ASSERT_NE(worker, nullptr);
  EXPECT_EQ(DescribeExitStatus(WaitForExit(*worker)), "exit code 0");

  absl::StatusOr<v1::Search> ended = (*cluster)->WaitUntilEnded(created.name(), kWaitTimeout);
  ASSERT_TRUE(ended.ok()) << ended.status();
  EXPECT_EQ(ended->state(), v1::SUCCEEDED) << ended->stop_reason();
  ASSERT_EQ(ended->candidates_size(), 1);
  EXPECT_EQ(ended->candidates(0).attempts(), 1);
  // Neither listed nor WORKER_LOST: it deregistered after its report.
  EXPECT_THAT(ListWorkers(**cluster), IsEmpty());
}

}  // namespace
}  // namespace paratune

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (!paratune::SetTestBinaries(argc, argv)) {
    std::fprintf(stderr, "usage: e2e_worker_exit_test PARATUNE_SERVER PARATUNE_WORKER\n");
    return 2;
  }
  paratune::WorkerBinary() = argv[2];
  return RUN_ALL_TESTS();
}
