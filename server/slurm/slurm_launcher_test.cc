// Which probes the SlurmLauncher submits jobs for, and when.
#include "server/slurm/slurm_launcher.h"

#include <cstdint>
#include <map>
#include <memory>

#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/core/launch_target.h"
#include "server/core/probes_queued_listener.h"
#include "server/slurm/slurm_launcher_test_fixture.h"

namespace paratune {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

TEST_F(SlurmLauncherTest, SubmitsAJobForEachProbeNoWorkerCanHostWithinMaxJobs) {
  QueueSearch(1, 3);
  std::unique_ptr<SlurmLauncher> launcher = StartLauncher();
  ASSERT_NE(launcher, nullptr);
  std::map<int64_t, FakeSlurm::Job> jobs = slurm_.jobs();
  ASSERT_THAT(jobs, SizeIs(2));
  EXPECT_EQ(jobs[1].name, "paratune-s1-c0-a1");
  EXPECT_EQ(jobs[2].name, "paratune-s1-c1-a1");
  EXPECT_THAT(jobs[1].sbatch_args,
              AllOf(Contains("--nodes=1"), Contains("--exclusive"), Contains("--no-requeue"),
                    Contains("--time=15"),
                    Contains(AllOf(HasSubstr("--wrap=exec srun"),
                                   HasSubstr("paratune.probe=searches/1/candidates/0/probes/1"),
                                   HasSubstr("'--server=scheduler:50051'")))));
  // The jobs exist: a second round submits nothing more.
  ASSERT_TRUE(launcher->Reconcile().ok());
  EXPECT_THAT(slurm_.calls("sbatch"), SizeIs(2));
  EXPECT_THAT(target_.calls(), IsEmpty());
  const SlurmLauncher::Stats stats = launcher->stats();
  EXPECT_EQ(stats.jobs_submitted, 2);
  EXPECT_EQ(stats.jobs.at("PENDING"), 2);
}

TEST_F(SlurmLauncherTest, ProbesThatLiveWorkersCanHostOrRunGetNoJob) {
  PendingProbe placeable = Queued(1, 0);
  placeable.unplaceable = false;
  target_.Add(placeable);
  target_.Add(Queued(1, 1));
  target_.SetRunning("searches/1/candidates/1/probes/1", /*on_reserved_workers=*/false);
  std::unique_ptr<SlurmLauncher> launcher = StartLauncher();
  ASSERT_NE(launcher, nullptr);
  EXPECT_THAT(slurm_.calls("sbatch"), IsEmpty());
}

TEST_F(SlurmLauncherTest, JobsTakeTurnsBetweenSearches) {
  QueueSearch(1, 3);
  QueueSearch(2, 3);
  std::unique_ptr<SlurmLauncher> launcher = StartLauncher();
  ASSERT_NE(launcher, nullptr);
  std::map<int64_t, FakeSlurm::Job> jobs = slurm_.jobs();
  ASSERT_THAT(jobs, SizeIs(2));
  EXPECT_EQ(jobs[1].name, "paratune-s1-c0-a1");
  EXPECT_EQ(jobs[2].name, "paratune-s2-c0-a1");
}

TEST_F(SlurmLauncherTest, ProbesQueuedRunARoundWithoutWaitingForThePollInterval) {
  std::unique_ptr<SlurmLauncher> launcher = StartLauncher();
  ASSERT_NE(launcher, nullptr);
  QueueSearch(1, 1);
  EXPECT_FALSE(slurm_.first_submission().HasBeenNotified());
  ProbesQueuedListener& listener = *launcher;
  listener.OnProbesQueued();
  EXPECT_TRUE(slurm_.first_submission().WaitForNotificationWithTimeout(absl::Seconds(30)));
}

}  // namespace
}  // namespace paratune
