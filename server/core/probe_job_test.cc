#include "server/core/probe_job.h"

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/subprocess.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Candidate 2 of search 7, second attempt: a replica of 12 ranks in tensor x context groups
// of 4, on a cluster of 8-GPU nodes.
PendingProbe GangProbe() {
  PendingProbe probe;
  probe.probe = "searches/7/candidates/2/probes/2";
  probe.backend = "sim";
  probe.ranks = 12;
  probe.group_size = 4;
  probe.gpus_per_node = 8;
  probe.deadline = absl::Seconds(600);
  return probe;
}

ProbeJobOptions Options() {
  ProbeJobOptions options;
  options.server_address = "scheduler:50051";
  options.worker_binary = "/opt/paratune/bin/paratune-worker";
  options.worker_args = {"--sim_gpus=8", "--log_level=it's"};
  return options;
}

TEST(ProbeJobTest, JobNamesNameTheProbe) {
  const ProbeId probe{7, 2, 3};
  EXPECT_EQ(ProbeJobName("paratune", probe), "paratune-s7-c2-a3");
  std::optional<ProbeId> parsed = ProbeOfJobName("paratune", "paratune-s7-c2-a3");
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->search_id, 7);
  EXPECT_EQ(parsed->candidate, 2);
  EXPECT_EQ(parsed->attempt, 3);
  // A prefix may itself hold the separators.
  EXPECT_TRUE(ProbeOfJobName("lab-s1-c", ProbeJobName("lab-s1-c", probe)).has_value());
  for (const char* other :
       {"paratune-workers", "paratune-s7-c2", "paratune-s7-c2-a3x", "other-s7-c2-a3",
        "paratune-s+7-c2-a3", "paratune-s07-c2-a3", "paratune2-s7-c2-a3"}) {
    EXPECT_FALSE(ProbeOfJobName("paratune", other).has_value()) << other;
  }
}

TEST(ProbeJobTest, NodesHoldWholeGroups) {
  PendingProbe probe = GangProbe();
  auto nodes = [&] { return MakeProbeJob(Options(), probe).value().nodes; };
  EXPECT_EQ(nodes(), 2);
  probe.gpus_per_node = 6;  // one group of 4 per node
  EXPECT_EQ(nodes(), 3);
  probe.ranks = 1;
  probe.group_size = 1;
  EXPECT_EQ(nodes(), 1);
  probe.group_size = 16;
  const absl::Status status = MakeProbeJob(Options(), probe).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("group of 16 ranks does not fit a node of 6 GPUs"));
}

TEST(ProbeJobTest, ArgumentsAskForTheNodesTheDeadlineAndOneWorkerPerNode) {
  ProbeJobOptions options = Options();
  options.partition = "gpu";
  options.account = "ml-infra";
  options.output = "/shared/jobs/%j.out";
  options.extra_sbatch_args = {"--qos=short"};
  absl::StatusOr<ProbeJob> job = MakeProbeJob(options, GangProbe());
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->name, "paratune-s7-c2-a2");
  const std::vector<std::string>& args = job->sbatch_args;
  ASSERT_EQ(args.size(), 12u);
  EXPECT_THAT(
      std::vector<std::string>(args.begin(), args.end() - 1),
      ElementsAre("--job-name=paratune-s7-c2-a2", "--nodes=2", "--ntasks-per-node=1", "--time=15",
                  "--no-requeue", "--gpus-per-node=8", "--exclusive", "--partition=gpu",
                  "--account=ml-infra", "--output=/shared/jobs/%j.out", "--qos=short"));
  EXPECT_EQ(args.back(),
            "--wrap=exec srun --ntasks-per-node=1 --kill-on-bad-exit=1 "
            "'/opt/paratune/bin/paratune-worker' '--server=scheduler:50051' '--backend=sim' "
            "--exit_after_probes=1 "
            "'--labels=slurm_job_id='\"$SLURM_JOB_ID\"',paratune.probe=searches/7/candidates/2/"
            "probes/2' '--sim_gpus=8' '--log_level=it'\\''s'");

  options = Options();
  options.request_gpus = false;
  options.exclusive = false;
  options.startup_allowance = absl::Seconds(30);
  PendingProbe probe = GangProbe();
  probe.deadline = absl::Seconds(61);
  job = MakeProbeJob(options, probe);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_THAT(std::vector<std::string>(job->sbatch_args.begin(), job->sbatch_args.end() - 1),
              ElementsAre("--job-name=paratune-s7-c2-a2", "--nodes=2", "--ntasks-per-node=1",
                          "--time=2", "--no-requeue"));
}

// Runs the job's script with /bin/sh, as sbatch --wrap does, with an srun that prints its
// arguments one per line.
TEST(ProbeJobTest, TheScriptPassesEveryArgumentIntactToSrun) {
  const std::string dir = absl::StrCat(std::getenv("TEST_TMPDIR"), "/bin");
  mkdir(dir.c_str(), 0755);
  {
    std::ofstream srun(dir + "/srun");
    srun << "#!/bin/sh\nprintf '%s\\n' \"$@\"\n";
  }
  chmod((dir + "/srun").c_str(), 0755);
  absl::StatusOr<ProbeJob> job = MakeProbeJob(Options(), GangProbe());
  ASSERT_TRUE(job.ok()) << job.status();
  absl::string_view script = job->sbatch_args.back();
  ASSERT_TRUE(absl::ConsumePrefix(&script, "--wrap="));

  SubprocessOptions run;
  run.argv = {"/bin/sh", "-c", std::string(script)};
  run.env = {{"PATH", absl::StrCat(dir, ":/usr/bin:/bin")}, {"SLURM_JOB_ID", "4242"}};
  run.timeout = absl::Seconds(30);
  absl::Notification never;
  absl::StatusOr<SubprocessResult> result = RunSubprocess(run, never);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->exit_code, 0) << result->stderr_tail;
  EXPECT_THAT(absl::StrSplit(absl::StripTrailingAsciiWhitespace(result->stdout_tail), '\n'),
              ElementsAre("--ntasks-per-node=1", "--kill-on-bad-exit=1",
                          "/opt/paratune/bin/paratune-worker", "--server=scheduler:50051",
                          "--backend=sim", "--exit_after_probes=1",
                          "--labels=slurm_job_id=4242,paratune.probe=searches/7/candidates/2/"
                          "probes/2",
                          "--sim_gpus=8", "--log_level=it's"));
}

TEST(ProbeJobTest, BadOptionsNameTheOption) {
  EXPECT_TRUE(ValidateProbeJobOptions(Options()).ok());
  ProbeJobOptions options = Options();
  options.job_name_prefix = "para tune";
  EXPECT_THAT(ValidateProbeJobOptions(options).message(),
              HasSubstr("job_name_prefix (\"para tune\")"));
  options = Options();
  options.startup_allowance = absl::ZeroDuration();
  EXPECT_THAT(ValidateProbeJobOptions(options).message(), HasSubstr("startup_allowance (0)"));
  for (const char* taken : {"--labels=a=b", "-server=x", "--backend", "--exit_after_probes=2"}) {
    options = Options();
    options.worker_args.push_back(taken);
    const absl::Status status = ValidateProbeJobOptions(options);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << taken;
    EXPECT_THAT(status.message(), HasSubstr(absl::StrCat("worker_args (\"", taken))) << taken;
  }
}

TEST(ProbeJobTest, WorkerArgsMustSetTheRequiredCredentialFlags) {
  ProbeJobOptions options = Options();
  options.required_worker_flags = {"tls_ca", "token_file"};
  options.worker_args.push_back("--tls_ca=/shared/paratune/ca.crt");
  const absl::Status status = ValidateProbeJobOptions(options);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("worker_args (\"--sim_gpus=8 "));
  EXPECT_THAT(status.message(), HasSubstr("set no --token_file, which the jobs' workers need"));
  // Either form of a flag with a value counts.
  options.worker_args.push_back("--token_file");
  options.worker_args.push_back("/shared/paratune/worker.token");
  EXPECT_TRUE(ValidateProbeJobOptions(options).ok());
}

}  // namespace
}  // namespace paratune
