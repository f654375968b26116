// End to end with a real single-node Slurm (tests/slurm_cluster.h): a local paratune-server,
// and paratune-workers started by Slurm through deploy/slurm/paratune-workers.sbatch (one
// per node with srun, sim backend), complete a search; scancel stops the workers.
// Needs root; tagged slurm (see tests/BUILD.bazel).
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/metrics_text.h"
#include "tests/slurm_cluster.h"
#include "tests/test_cluster.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;

constexpr absl::Duration kRegisterTimeout = absl::Seconds(60);
constexpr absl::Duration kSearchTimeout = absl::Seconds(120);
constexpr int64_t kProbes = 3;

std::string& WorkerBinary() {
  static auto* const path = new std::string();
  return *path;
}

std::string& SbatchScript() {
  static auto* const path = new std::string();
  return *path;
}

// The worker the Slurm job registered (label slurm_job_id), polling ListWorkers.
absl::StatusOr<v1::Worker> WaitForJobWorker(TestCluster& cluster, SlurmCluster& slurm,
                                            int64_t job) {
  const absl::Time give_up = absl::Now() + kRegisterTimeout;
  while (true) {
    v1::ListWorkersResponse workers;
    const grpc::Status status = cluster.autotuner().ListWorkers(
        ContextWithTimeout(absl::Seconds(10)).get(), v1::ListWorkersRequest(), &workers);
    if (!status.ok()) return absl::UnavailableError(status.error_message());
    for (const v1::Worker& worker : workers.workers()) {
      auto label = worker.labels().find("slurm_job_id");
      if (label != worker.labels().end() && label->second == absl::StrCat(job)) return worker;
    }
    if (absl::Now() >= give_up) {
      absl::StatusOr<std::string> state = slurm.JobState(job);
      absl::StatusOr<std::string> log =
          ReadTextFile(absl::StrCat(slurm.dir(), "/workers-", job, ".out"));
      return absl::DeadlineExceededError(absl::StrCat(
          "no worker of job ", job, " registered within ", absl::FormatDuration(kRegisterTimeout),
          "; job state ", state.ok() ? *state : state.status().ToString(), "; job output:\n",
          log.ok() ? *log : log.status().ToString()));
    }
    absl::SleepFor(absl::Milliseconds(200));
  }
}

TEST(SlurmTest, WorkersStartedBySbatchCompleteASearch) {
  const absl::Time start = absl::Now();
  absl::StatusOr<std::unique_ptr<SlurmCluster>> slurm = SlurmCluster::Start();
  ASSERT_TRUE(slurm.ok()) << slurm.status();
  std::printf("slurm: single-node cluster idle after %s (%s)\n",
              absl::FormatDuration(absl::Now() - start).c_str(), (*slurm)->dir().c_str());
  absl::StatusOr<std::unique_ptr<TestCluster>> cluster = TestCluster::Start({});
  ASSERT_TRUE(cluster.ok()) << cluster.status();

  const std::string output = absl::StrCat((*slurm)->dir(), "/workers-%j.out");
  absl::StatusOr<int64_t> job = (*slurm)->Submit(
      {"--nodes=1", "--output=" + output,
       absl::StrCat("--export=ALL,PARATUNE_SERVER=", (*cluster)->address(),
                    ",PARATUNE_WORKER_BIN=", WorkerBinary(),
                    ",PARATUNE_WORKER_ARGS=--backend=sim --sim_gpus=8 --sim_probe_seconds=0.05"),
       SbatchScript()});
  ASSERT_TRUE(job.ok()) << job.status();
  absl::StatusOr<v1::Worker> worker = WaitForJobWorker(**cluster, **slurm, *job);
  ASSERT_TRUE(worker.ok()) << worker.status();
  std::printf("slurm: job %lld registered %s (host %s) after %s\n", static_cast<long long>(*job),
              worker->name().c_str(), worker->hostname().c_str(),
              absl::FormatDuration(absl::Now() - start).c_str());

  absl::StatusOr<v1::Search> search =
      (*cluster)->RunSearch(SmallSimSearch(kProbes), kSearchTimeout);
  ASSERT_TRUE(search.ok()) << search.status();
  EXPECT_EQ(search->state(), v1::SUCCEEDED) << search->stop_reason();
  EXPECT_EQ(search->counts().succeeded(), kProbes);
  for (const v1::Candidate& candidate : search->candidates()) {
    EXPECT_EQ(candidate.worker(), worker->name()) << candidate.name();
  }
  std::printf("slurm: %s %s: %s\n", search->name().c_str(),
              v1::SearchState_Name(search->state()).c_str(), search->stop_reason().c_str());

  absl::StatusOr<std::string> final_state = (*slurm)->Cancel(*job);
  ASSERT_TRUE(final_state.ok()) << final_state.status();
  EXPECT_EQ(*final_state, "CANCELLED");
  absl::StatusOr<std::string> log =
      ReadTextFile(absl::StrCat((*slurm)->dir(), "/workers-", *job, ".out"));
  ASSERT_TRUE(log.ok()) << log.status();
  std::printf("slurm: job %lld output:\n%s\n", static_cast<long long>(*job), log->c_str());
  EXPECT_THAT(*log, HasSubstr("msg=registered"));
  EXPECT_THAT(*log, HasSubstr("msg=\"probe reported\""));
  // scancel's SIGTERM reached the worker through srun, and it stopped gracefully.
  EXPECT_THAT(*log, HasSubstr("msg=\"shutting down\" signal=Terminated"));
  std::printf("slurm: whole test took %s\n", absl::FormatDuration(absl::Now() - start).c_str());
}

}  // namespace
}  // namespace paratune

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (argc < 4 || !paratune::SetTestBinaries(argc, argv)) {
    std::fprintf(stderr,
                 "usage: e2e_slurm_test PARATUNE_SERVER PARATUNE_WORKER PARATUNE_WORKERS_SBATCH\n");
    return 2;
  }
  // Slurm runs the job from its own working directory: absolute paths.
  paratune::WorkerBinary() = std::filesystem::absolute(argv[2]).string();
  paratune::SbatchScript() = std::filesystem::absolute(argv[3]).string();
  return RUN_ALL_TESTS();
}
