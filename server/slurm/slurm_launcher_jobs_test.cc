// How the SlurmLauncher follows its jobs: endings it reports, and the jobs it cancels.
#include <cstdint>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/core/resource_names.h"
#include "server/slurm/slurm_launcher.h"
#include "server/slurm/slurm_launcher_test_fixture.h"

namespace paratune {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

TEST_F(SlurmLauncherTest, ProbeRunsOnItsJobsWorkerAndTheJobEndsWithIt) {
  QueueSearch(1, 1);
  std::unique_ptr<SlurmLauncher> launcher = StartLauncher();
  ASSERT_NE(launcher, nullptr);
  // The job starts; its worker registers, reserved for the probe, and takes it.
  slurm_.Run(1);
  target_.SetRunning(kProbe, /*on_reserved_workers=*/true);
  ASSERT_TRUE(launcher->Reconcile().ok());
  EXPECT_THAT(slurm_.calls("scancel"), IsEmpty());

  // The worker reports the probe and exits; the job ends.
  target_.Remove(kProbe);
  slurm_.End(1, "COMPLETED", "0:0");
  ASSERT_TRUE(launcher->Reconcile().ok());

  EXPECT_THAT(target_.calls(),
              ElementsAre(absl::StrCat("LaunchEnded ", kProbe,
                                       ": slurm job 1 (paratune-s1-c0-a1) ended COMPLETED with "
                                       "exit code 0:0")));
  EXPECT_THAT(slurm_.calls("sbatch"), SizeIs(1));
  EXPECT_THAT(slurm_.calls("scontrol"), ElementsAre("scontrol show job 1"));
  const SlurmLauncher::Stats stats = launcher->stats();
  EXPECT_EQ(stats.jobs_ended.at("COMPLETED"), 1);
  EXPECT_THAT(stats.jobs, IsEmpty());
}

TEST_F(SlurmLauncherTest, JobThatEndsBeforeItsProbeStartedIsReportedAndReplaced) {
  QueueSearch(1, 1);
  std::unique_ptr<SlurmLauncher> launcher = StartLauncher();
  ASSERT_NE(launcher, nullptr);
  slurm_.End(1, "FAILED", "127:0");
  ASSERT_TRUE(launcher->Reconcile().ok());
  EXPECT_THAT(target_.calls(),
              ElementsAre(absl::StrCat("LaunchEnded ", kProbe,
                                       ": slurm job 1 (paratune-s1-c0-a1) ended FAILED with exit "
                                       "code 127:0")));
  // The next attempt, which the target queued, has its own job, submitted in the same round.
  EXPECT_EQ(slurm_.jobs()[2].name, "paratune-s1-c0-a2");

  slurm_.End(2, "NODE_FAIL", "0:0");
  ASSERT_TRUE(launcher->Reconcile().ok());
  EXPECT_THAT(target_.calls(),
              ElementsAre(HasSubstr("ended FAILED"),
                          AllOf(HasSubstr("LaunchEnded searches/1/candidates/0/probes/2: "),
                                HasSubstr("ended NODE_FAIL"))));
  // The probe has no attempt left: nothing more is submitted.
  EXPECT_THAT(target_.pending(), IsEmpty());
  EXPECT_THAT(slurm_.calls("sbatch"), SizeIs(2));
  EXPECT_EQ(launcher->stats().jobs_ended.at("FAILED"), 1);
  EXPECT_EQ(launcher->stats().jobs_ended.at("NODE_FAIL"), 1);
}

TEST_F(SlurmLauncherTest, JobEndingUnderItsRunningProbeIsReportedAtOnce) {
  QueueSearch(1, 1);
  std::unique_ptr<SlurmLauncher> launcher = StartLauncher();
  ASSERT_NE(launcher, nullptr);
  slurm_.Run(1);
  target_.SetRunning(kProbe, /*on_reserved_workers=*/true);
  slurm_.End(1, "TIMEOUT", "0:15");
  ASSERT_TRUE(launcher->Reconcile().ok());
  EXPECT_THAT(target_.calls(),
              ElementsAre(absl::StrCat("LaunchEnded ", kProbe,
                                       ": slurm job 1 (paratune-s1-c0-a1) ended TIMEOUT with "
                                       "exit code 0:15")));
  EXPECT_EQ(slurm_.jobs()[2].name, "paratune-s1-c0-a2");
}

TEST_F(SlurmLauncherTest, CancelledSearchCancelsItsJobs) {
  QueueSearch(1, 3);
  std::unique_ptr<SlurmLauncher> launcher = StartLauncher();
  ASSERT_NE(launcher, nullptr);
  slurm_.Run(1);
  for (int64_t candidate = 0; candidate < 3; ++candidate) {
    target_.Remove(ProbeName(1, candidate, 1));
  }
  ASSERT_TRUE(launcher->Reconcile().ok());
  // The pending job goes at once; the running one gets time to end by itself, since its
  // workers leave once their probe has ended.
  EXPECT_THAT(slurm_.calls("scancel"), ElementsAre("scancel 2"));
  clock_.Advance(absl::Seconds(9));
  ASSERT_TRUE(launcher->Reconcile().ok());
  EXPECT_THAT(slurm_.calls("scancel"), ElementsAre("scancel 2"));
  clock_.Advance(absl::Seconds(1));
  ASSERT_TRUE(launcher->Reconcile().ok());
  EXPECT_THAT(slurm_.calls("scancel"), ElementsAre("scancel 2", "scancel 1"));
  EXPECT_THAT(slurm_.calls("sbatch"), SizeIs(2));
  ASSERT_TRUE(launcher->Reconcile().ok());
  EXPECT_EQ(launcher->stats().jobs_ended.at("CANCELLED"), 2);
  EXPECT_THAT(slurm_.calls("scancel"), SizeIs(2));
  const std::string why =
      "paratune-server cancelled it: its probe is no longer queued or running (its search "
      "ended, or the probe was reported or re-queued as another attempt)";
  EXPECT_THAT(target_.calls(),
              ElementsAre(AllOf(HasSubstr("LaunchEnded searches/1/candidates/1/probes/1: slurm "
                                          "job 2 (paratune-s1-c1-a1) ended CANCELLED with exit "
                                          "code 0:15; "),
                                HasSubstr(why)),
                          AllOf(HasSubstr("LaunchEnded searches/1/candidates/0/probes/1: slurm "
                                          "job 1 (paratune-s1-c0-a1) ended CANCELLED"),
                                HasSubstr(why))));
}

TEST_F(SlurmLauncherTest, JobIsCancelledWhenOtherWorkersTakeItsProbe) {
  QueueSearch(1, 1);
  std::unique_ptr<SlurmLauncher> launcher = StartLauncher();
  ASSERT_NE(launcher, nullptr);
  // A long-lived worker takes the probe before the job starts.
  target_.SetRunning(kProbe, /*on_reserved_workers=*/false);
  ASSERT_TRUE(launcher->Reconcile().ok());
  EXPECT_THAT(slurm_.calls("scancel"), ElementsAre("scancel 1"));
  // Its ending is reported; the probe runs on, and gets no other job.
  ASSERT_TRUE(launcher->Reconcile().ok());
  EXPECT_THAT(target_.calls(), ElementsAre(AllOf(HasSubstr("ended CANCELLED"),
                                                 HasSubstr("paratune-server cancelled it: other "
                                                           "workers run its probe"))));
  EXPECT_THAT(target_.pending(), ElementsAre(kProbe));
  EXPECT_THAT(slurm_.calls("sbatch"), SizeIs(1));
}

TEST_F(SlurmLauncherTest, StartedJobWhoseProbeEndedIsLeftToEndByItself) {
  QueueSearch(1, 1);
  std::unique_ptr<SlurmLauncher> launcher = StartLauncher();
  ASSERT_NE(launcher, nullptr);
  slurm_.Run(1);
  target_.Remove(kProbe);
  ASSERT_TRUE(launcher->Reconcile().ok());
  slurm_.End(1, "COMPLETED", "0:0");
  clock_.Advance(absl::Seconds(1));
  ASSERT_TRUE(launcher->Reconcile().ok());
  EXPECT_THAT(slurm_.calls("scancel"), IsEmpty());
  EXPECT_EQ(launcher->stats().jobs_ended.at("COMPLETED"), 1);
}

TEST_F(SlurmLauncherTest, RunningJobWhoseWorkersDoNotTakeTheProbeIsCancelled) {
  QueueSearch(1, 1);
  std::unique_ptr<SlurmLauncher> launcher = StartLauncher();
  ASSERT_NE(launcher, nullptr);
  slurm_.Run(1);
  ASSERT_TRUE(launcher->Reconcile().ok());
  clock_.Advance(absl::Minutes(4));
  ASSERT_TRUE(launcher->Reconcile().ok());
  EXPECT_THAT(slurm_.calls("scancel"), IsEmpty());
  clock_.Advance(absl::Minutes(2));
  ASSERT_TRUE(launcher->Reconcile().ok());
  EXPECT_THAT(slurm_.calls("scancel"), ElementsAre("scancel 1"));
  ASSERT_TRUE(launcher->Reconcile().ok());
  EXPECT_THAT(target_.calls(),
              ElementsAre(absl::StrCat("LaunchEnded ", kProbe,
                                       ": slurm job 1 (paratune-s1-c0-a1) ended CANCELLED with "
                                       "exit code 0:15; paratune-server cancelled it: its "
                                       "workers did not take the probe within 5m of the job "
                                       "starting (see the candidate's waiting_reason)")));
}

}  // namespace
}  // namespace paratune
