// The SlurmLauncher after a restart, and when sbatch refuses, Slurm cannot be reached or its
// options are bad.
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/core/launch_target.h"
#include "server/slurm/slurm_client.h"
#include "server/slurm/slurm_launcher.h"
#include "server/slurm/slurm_launcher_test_fixture.h"

namespace paratune {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

TEST_F(SlurmLauncherTest, RestartedLauncherFollowsTheJobsItFindsByName) {
  QueueSearch(1, 1);
  StartLauncher().reset();
  ASSERT_THAT(slurm_.calls("sbatch"), SizeIs(1));
  // Someone else's job and the workers script's job are left alone.
  ASSERT_TRUE(
      slurm_.Runner()({"sbatch", "--parsable", "--job-name=paratune-workers", "--wrap=true"}).ok());
  ASSERT_TRUE(slurm_.Runner()({"sbatch", "--parsable", "--job-name=training", "--wrap=true"}).ok());

  std::unique_ptr<SlurmLauncher> restarted = StartLauncher();
  ASSERT_NE(restarted, nullptr);
  EXPECT_THAT(slurm_.calls("sbatch"), SizeIs(3));
  EXPECT_EQ(restarted->stats().jobs.at("PENDING"), 1);
  slurm_.End(1, "FAILED", "1:0");
  ASSERT_TRUE(restarted->Reconcile().ok());
  EXPECT_THAT(target_.calls(),
              ElementsAre(absl::StrCat("LaunchEnded ", kProbe,
                                       ": slurm job 1 (paratune-s1-c0-a1) ended FAILED with exit "
                                       "code 1:0")));
  EXPECT_THAT(slurm_.calls("scancel"), IsEmpty());
  EXPECT_EQ(slurm_.jobs()[4].name, "paratune-s1-c0-a2");
}

TEST_F(SlurmLauncherTest, RefusedSubmissionsAreRefusedLaunchesWithSbatchsMessage) {
  QueueSearch(1, 2);
  const std::string refusal =
      "sbatch: error: Batch job submission failed: Invalid partition name specified";
  slurm_.RefuseSubmissions(refusal);
  std::unique_ptr<SlurmLauncher> launcher = StartLauncher();
  ASSERT_NE(launcher, nullptr);
  ASSERT_TRUE(launcher->Reconcile().ok());
  // The same refusal reads the same for every probe and attempt: no text of the probe's own.
  const std::string reason =
      absl::StrCat("its Slurm job could not be submitted: sbatch exited with code 1: ", refusal);
  EXPECT_THAT(
      target_.calls(),
      ElementsAre(absl::StrCat("LaunchRefused searches/1/candidates/0/probes/1: ", reason),
                  absl::StrCat("LaunchRefused searches/1/candidates/1/probes/1: ", reason),
                  absl::StrCat("LaunchRefused searches/1/candidates/0/probes/2: ", reason),
                  absl::StrCat("LaunchRefused searches/1/candidates/1/probes/2: ", reason)));
  EXPECT_THAT(slurm_.jobs(), IsEmpty());
  const SlurmLauncher::Stats stats = launcher->stats();
  EXPECT_EQ(stats.submit_failures, 4);
  EXPECT_EQ(stats.jobs_submitted, 0);

  // Once sbatch takes jobs again, queued probes get them.
  target_.Add(Queued(2, 0));
  slurm_.RefuseSubmissions("");
  ASSERT_TRUE(launcher->Reconcile().ok());
  EXPECT_EQ(slurm_.jobs()[1].name, "paratune-s2-c0-a1");
  EXPECT_THAT(target_.calls(), SizeIs(4));
}

TEST_F(SlurmLauncherTest, ProbeThatCannotBeAJobIsARefusedLaunch) {
  PendingProbe probe = Queued(1, 0);
  probe.group_size = 16;
  target_.Add(probe);
  std::unique_ptr<SlurmLauncher> launcher = StartLauncher();
  ASSERT_NE(launcher, nullptr);
  EXPECT_THAT(target_.calls(),
              ElementsAre(absl::StrCat("LaunchRefused ", kProbe,
                                       ": its Slurm job could not be submitted: a tensor x "
                                       "context parallel group of 16 ranks does not fit a node "
                                       "of 8 GPUs")));
  EXPECT_THAT(slurm_.calls("sbatch"), IsEmpty());
  EXPECT_EQ(launcher->stats().submit_failures, 0);
}

// An sbatch that did not run to its exit, or that printed no job id, may have left the job
// with Slurm: the attempt counts, but nothing was refused.
TEST_F(SlurmLauncherTest, SbatchThatRefusedNothingForSureEndsTheLaunch) {
  QueueSearch(1, 1);
  slurm_.AnswerSubmissions(absl::UnavailableError("sbatch timed out after 1m: "));
  std::unique_ptr<SlurmLauncher> launcher = StartLauncher();
  ASSERT_NE(launcher, nullptr);
  slurm_.AnswerSubmissions(CommandOutput{0, "Submitted batch job\n", ""});
  ASSERT_TRUE(launcher->Reconcile().ok());
  EXPECT_THAT(
      target_.calls(),
      ElementsAre(absl::StrCat("LaunchEnded ", kProbe,
                               ": its Slurm job could not be submitted: sbatch timed out after "
                               "1m: "),
                  "LaunchEnded searches/1/candidates/0/probes/2: its Slurm job could not be "
                  "submitted: sbatch printed no job id: \"Submitted batch job\""));
  EXPECT_EQ(launcher->stats().submit_failures, 2);
}

TEST_F(SlurmLauncherTest, UnreachableSlurmDecidesNothing) {
  QueueSearch(1, 1);
  slurm_.SetUnreachable(true);
  EXPECT_EQ(SlurmLauncher::Start(LauncherOptions(), &target_).status().code(),
            absl::StatusCode::kUnavailable);
  slurm_.SetUnreachable(false);
  std::unique_ptr<SlurmLauncher> launcher = StartLauncher();
  ASSERT_NE(launcher, nullptr);
  slurm_.SetUnreachable(true);
  const absl::Status status = launcher->Reconcile();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(status.message(), HasSubstr("Unable to contact slurm controller"));
  // The job is not taken for ended while squeue fails.
  EXPECT_THAT(target_.calls(), IsEmpty());
  EXPECT_EQ(launcher->stats().command_errors.at("squeue"), 1);
  EXPECT_EQ(launcher->stats().jobs.at("PENDING"), 1);
}

TEST_F(SlurmLauncherTest, BadOptionsNameTheOption) {
  SlurmLauncher::Options options = LauncherOptions();
  options.max_jobs = 0;
  EXPECT_EQ(SlurmLauncher::Start(options, &target_).status(),
            absl::InvalidArgumentError("max_jobs (0) must be in [1, 10000]"));
  options = LauncherOptions();
  options.poll_interval = absl::ZeroDuration();
  EXPECT_EQ(SlurmLauncher::Start(options, &target_).status(),
            absl::InvalidArgumentError("poll_interval (0) must be > 0"));
  options = LauncherOptions();
  options.job.worker_args = {"--labels=a=b"};
  EXPECT_THAT(SlurmLauncher::Start(options, &target_).status().message(),
              HasSubstr("worker_args (\"--labels=a=b\")"));
  options = LauncherOptions();
  options.job.server_address = "";
  EXPECT_EQ(SlurmLauncher::Start(options, &target_).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(slurm_.calls("squeue"), IsEmpty());
}

}  // namespace
}  // namespace paratune
