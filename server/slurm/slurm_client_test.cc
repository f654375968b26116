#include "server/slurm/slurm_client.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// What Slurm 22.05 (Debian 12) printed on the single-node test cluster (tests/slurm_cluster.h).
constexpr char kScontrolFailedJob[] =
    "JobId=2 JobName=paratune-s1-c1-a1\n"
    "   UserId=root(0) GroupId=root(0) MCS_label=N/A\n"
    "   Priority=4294901758 Nice=0 Account=(null) QOS=(null)\n"
    "   JobState=FAILED Reason=NonZeroExitCode Dependency=(null)\n"
    "   Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=3:0\n"
    "   RunTime=00:00:00 TimeLimit=00:02:00 TimeMin=N/A\n"
    "   Partition=paratune AllocNode:Sid=localhost:28145\n"
    "   StdOut=/tmp/ptslurm-manual/job-2.out\n"
    "   Power=\n";

// Answers each program (argv[0]) with a scripted output and records every call.
class ScriptedSlurm {
 public:
  void Answer(const std::string& program, CommandOutput output) {
    answers_[program] = std::move(output);
  }
  CommandRunner Runner() {
    return [this](const std::vector<std::string>& argv) -> absl::StatusOr<CommandOutput> {
      calls_.push_back(absl::StrJoin(argv, " "));
      auto answer = answers_.find(argv[0]);
      if (answer == answers_.end()) return absl::NotFoundError(argv[0] + " is not scripted");
      return answer->second;
    };
  }
  const std::vector<std::string>& calls() const { return calls_; }

 private:
  std::map<std::string, CommandOutput> answers_;
  std::vector<std::string> calls_;
};

class SlurmClientTest : public ::testing::Test {
 protected:
  SlurmClientTest() : client_(SlurmClient::Commands(), slurm_.Runner()) {}

  ScriptedSlurm slurm_;
  SlurmClient client_;
};

TEST_F(SlurmClientTest, SubmitReturnsTheParsableJobId) {
  slurm_.Answer("sbatch", {0, "17;cluster-a\n", ""});
  EXPECT_EQ(client_.Submit({"--nodes=1", "--wrap=true"}).value(), 17);
  EXPECT_THAT(slurm_.calls(), ElementsAre("sbatch --parsable --nodes=1 --wrap=true"));
}

TEST_F(SlurmClientTest, RefusedSubmissionIsFailedPreconditionWithSbatchsMessage) {
  slurm_.Answer("sbatch", {1, "",
                           "sbatch: error: invalid partition specified: nope\n"
                           "sbatch: error: Batch job submission failed: Invalid partition name "
                           "specified\n"});
  const absl::Status status = client_.Submit({"--partition=nope"}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("Invalid partition name specified"));
  slurm_.Answer("sbatch", {0, "Submitted batch job 3\n", ""});
  EXPECT_EQ(client_.Submit({}).status().code(), absl::StatusCode::kUnavailable);
}

TEST_F(SlurmClientTest, ListJobsParsesSqueueAndSkipsWhatIsNotAPlainJob) {
  slurm_.Answer("squeue", {0,
                           "2|PENDING|Resources|paratune-s1-c1-a1\n"
                           "1|RUNNING|None|paratune-s1-c0-a1\n"
                           "5_1|RUNNING|None|someone's array\n"
                           "7|RUNNING|None|name|with|bars\n",
                           ""});
  absl::StatusOr<std::vector<SlurmClient::Job>> jobs = client_.ListJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 3u);
  EXPECT_EQ((*jobs)[0].id, 2);
  EXPECT_EQ((*jobs)[0].state, "PENDING");
  EXPECT_EQ((*jobs)[0].reason, "Resources");
  EXPECT_EQ((*jobs)[0].name, "paratune-s1-c1-a1");
  EXPECT_EQ((*jobs)[1].state, "RUNNING");
  EXPECT_EQ((*jobs)[2].name, "name|with|bars");
  EXPECT_THAT(slurm_.calls(), ElementsAre("squeue --me --noheader --format=%i|%T|%r|%j"));
}

TEST_F(SlurmClientTest, FailingSqueueIsAnErrorNotAnEmptyList) {
  slurm_.Answer("squeue", {1, "",
                           "slurm_load_jobs error: Unable to contact slurm controller (connect "
                           "failure)\n"});
  const absl::Status status = client_.ListJobs().status();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(status.message(), HasSubstr("Unable to contact slurm controller"));
}

TEST_F(SlurmClientTest, FinalStateComesFromSacctWhenAccountingHasTheJob) {
  slurm_.Answer("sacct", {0, "17|CANCELLED by 0|0:15\n", ""});
  absl::StatusOr<SlurmClient::Ending> ending = client_.FinalState(17);
  ASSERT_TRUE(ending.ok()) << ending.status();
  EXPECT_EQ(ending->state, "CANCELLED");
  EXPECT_EQ(ending->exit_code, "0:15");
  EXPECT_THAT(slurm_.calls(), ElementsAre("sacct --noheader --parsable2 --allocations --jobs=17 "
                                          "--format=JobID,State,ExitCode"));
}

TEST_F(SlurmClientTest, FinalStateFallsBackToScontrolWhileSacctLags) {
  slurm_.Answer("sacct", {0, "2|RUNNING|0:0\n", ""});
  slurm_.Answer("scontrol", {0, kScontrolFailedJob, ""});
  absl::StatusOr<SlurmClient::Ending> ending = client_.FinalState(2);
  ASSERT_TRUE(ending.ok()) << ending.status();
  EXPECT_EQ(ending->state, "FAILED");
  EXPECT_EQ(ending->exit_code, "3:0");
  EXPECT_EQ(slurm_.calls().back(), "scontrol show job 2");
}

TEST_F(SlurmClientTest, WithoutAccountingOnlyScontrolIsAskedAfterTheFirstTime) {
  slurm_.Answer("sacct", {1, "", "Slurm accounting storage is disabled\n"});
  slurm_.Answer("scontrol", {0, kScontrolFailedJob, ""});
  ASSERT_TRUE(client_.FinalState(2).ok());
  ASSERT_TRUE(client_.FinalState(2).ok());
  EXPECT_THAT(slurm_.calls(),
              ElementsAre(HasSubstr("sacct"), "scontrol show job 2", "scontrol show job 2"));
}

TEST_F(SlurmClientTest, ForgottenJobIsNotFound) {
  slurm_.Answer("sacct", {1, "", "Slurm accounting storage is disabled\n"});
  slurm_.Answer("scontrol", {1, "", "slurm_load_jobs error: Invalid job id specified\n"});
  EXPECT_EQ(client_.FinalState(99).status().code(), absl::StatusCode::kNotFound);
  slurm_.Answer("scontrol", {1, "", "slurm_load_jobs error: Socket timed out\n"});
  EXPECT_EQ(client_.FinalState(99).status().code(), absl::StatusCode::kUnavailable);
}

TEST_F(SlurmClientTest, CancellingAnEndedJobIsNoError) {
  slurm_.Answer("scancel", {0, "", ""});
  EXPECT_TRUE(client_.Cancel(5).ok());
  slurm_.Answer("scancel",
                {1, "", "scancel: error: Kill job error on job id 5: Invalid job id specified\n"});
  EXPECT_TRUE(client_.Cancel(5).ok());
  slurm_.Answer("scancel", {1, "", "scancel: error: Access/permission denied\n"});
  EXPECT_EQ(client_.Cancel(5).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(slurm_.calls().front(), "scancel 5");
}

TEST(SubprocessCommandRunnerTest, RunsTheProgramAndKeepsItsExitCodeAndStreams) {
  absl::Notification cancel;
  CommandRunner run = SubprocessCommandRunner(absl::Seconds(30), &cancel);
  absl::StatusOr<CommandOutput> output = run({"/bin/sh", "-c", "echo out; echo err >&2; exit 3"});
  ASSERT_TRUE(output.ok()) << output.status();
  EXPECT_EQ(output->exit_code, 3);
  EXPECT_EQ(output->stdout_text, "out\n");
  EXPECT_EQ(output->stderr_text, "err\n");
  EXPECT_EQ(run({"/nonexistent/sbatch"}).status().code(), absl::StatusCode::kNotFound);
}

TEST(SubprocessCommandRunnerTest, HungCommandIsUnavailable) {
  absl::Notification cancel;
  CommandRunner run = SubprocessCommandRunner(absl::Milliseconds(100), &cancel);
  const absl::Status status = run({"/bin/sleep", "30"}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(status.message(), HasSubstr("timed out"));
  cancel.Notify();
  EXPECT_EQ(run({"/bin/sleep", "30"}).status().code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace paratune
