#include "server/slurm_launcher.h"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/fake_clock.h"
#include "server/launch_target.h"
#include "server/probes_queued_listener.h"
#include "server/resource_names.h"

namespace paratune {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

// A Slurm controller in memory, answering sbatch, squeue, sacct, scontrol and scancel the way
// Slurm 22.05 without accounting storage does (server/slurm_client_test.cc holds the real
// outputs). Tests move jobs along with Run and End. Thread-safe.
class FakeSlurm {
 public:
  struct Job {
    std::string name;
    std::vector<std::string> sbatch_args;
    std::string state = "PENDING";
    std::string exit_code = "0:0";
  };

  CommandRunner Runner() {
    return [this](const std::vector<std::string>& argv) { return Answer(argv); };
  }

  void Run(int64_t id) { Set(id, "RUNNING", "0:0"); }
  void End(int64_t id, const std::string& state, const std::string& exit_code) {
    Set(id, state, exit_code);
  }
  // Makes the next sbatch calls exit with code 1 and `message`, or succeed again when empty.
  void RefuseSubmissions(const std::string& message) {
    absl::MutexLock lock(&mu_);
    refusal_ = message;
  }
  // Makes the next sbatch calls end as `output` says (the runner's error when not OK: sbatch
  // did not run to its exit), or succeed again when nullopt.
  void AnswerSubmissions(std::optional<absl::StatusOr<CommandOutput>> output) {
    absl::MutexLock lock(&mu_);
    sbatch_answer_ = std::move(output);
  }
  void SetUnreachable(bool unreachable) {
    absl::MutexLock lock(&mu_);
    unreachable_ = unreachable;
  }

  std::map<int64_t, Job> jobs() {
    absl::MutexLock lock(&mu_);
    return jobs_;
  }
  std::vector<std::string> calls(absl::string_view program) {
    absl::MutexLock lock(&mu_);
    std::vector<std::string> matching;
    for (const std::string& call : calls_) {
      if (absl::StartsWith(call, absl::StrCat(program, " "))) matching.push_back(call);
    }
    return matching;
  }
  // Notified at the first sbatch call.
  absl::Notification& first_submission() { return first_submission_; }

 private:
  absl::StatusOr<CommandOutput> Answer(const std::vector<std::string>& argv) {
    absl::MutexLock lock(&mu_);
    calls_.push_back(absl::StrJoin(argv, " "));
    const std::string& program = argv[0];
    if (unreachable_) {
      return CommandOutput{1, "",
                           absl::StrCat(program, ": error: Unable to contact slurm controller")};
    }
    if (program == "sbatch") {
      if (!first_submission_.HasBeenNotified()) first_submission_.Notify();
      if (!refusal_.empty()) return CommandOutput{1, "", refusal_};
      if (sbatch_answer_.has_value()) return *sbatch_answer_;
      Job job;
      job.sbatch_args.assign(argv.begin() + 2, argv.end());
      for (absl::string_view arg : job.sbatch_args) {
        if (absl::ConsumePrefix(&arg, "--job-name=")) job.name = std::string(arg);
      }
      jobs_[++last_id_] = job;
      return CommandOutput{0, absl::StrCat(last_id_, "\n"), ""};
    }
    if (program == "squeue") {
      std::string out;
      for (const auto& [id, job] : jobs_) {
        if (Ended(job.state)) continue;
        absl::StrAppend(&out, id, "|", job.state, "|None|", job.name, "\n");
      }
      return CommandOutput{0, out, ""};
    }
    if (program == "sacct") return CommandOutput{1, "", "Slurm accounting storage is disabled\n"};
    int64_t id = 0;
    auto job = absl::SimpleAtoi(argv.back(), &id) ? jobs_.find(id) : jobs_.end();
    if (job == jobs_.end()) {
      return CommandOutput{1, "", "slurm_load_jobs error: Invalid job id specified\n"};
    }
    if (program == "scontrol") {
      return CommandOutput{0,
                           absl::StrCat("JobId=", id, " JobName=", job->second.name,
                                        "\n   JobState=", job->second.state,
                                        " Reason=None Dependency=(null)\n   Requeue=0 Restarts=0 "
                                        "BatchFlag=1 Reboot=0 ExitCode=",
                                        job->second.exit_code, "\n"),
                           ""};
    }
    if (program == "scancel") {
      if (!Ended(job->second.state)) {
        job->second.state = "CANCELLED";
        job->second.exit_code = "0:15";
      }
      return CommandOutput{0, "", ""};
    }
    return absl::NotFoundError(absl::StrCat(program, " is not faked"));
  }

  static bool Ended(const std::string& state) {
    return state != "PENDING" && state != "RUNNING" && state != "COMPLETING";
  }

  void Set(int64_t id, const std::string& state, const std::string& exit_code) {
    absl::MutexLock lock(&mu_);
    jobs_.at(id).state = state;
    jobs_.at(id).exit_code = exit_code;
  }

  absl::Mutex mu_;
  std::map<int64_t, Job> jobs_ ABSL_GUARDED_BY(mu_);
  int64_t last_id_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::string> calls_ ABSL_GUARDED_BY(mu_);
  std::string refusal_ ABSL_GUARDED_BY(mu_);
  std::optional<absl::StatusOr<CommandOutput>> sbatch_answer_ ABSL_GUARDED_BY(mu_);
  bool unreachable_ ABSL_GUARDED_BY(mu_) = false;
  absl::Notification first_submission_;
};

// The scheduler as the launcher sees it: the pending probes a test sets, and the calls the
// launcher makes. Like the scheduler, a launch that ended or was refused under a queued probe
// (or one running on its reserved workers) re-queues that probe as its next attempt while
// attempts remain, else drops it; the probe of an ended search or one that moved on is left
// as it is. Thread-safe.
class FakeLaunchTarget : public LaunchTarget {
 public:
  explicit FakeLaunchTarget(int64_t max_attempts) : max_attempts_(max_attempts) {}

  void Add(const PendingProbe& probe) {
    absl::MutexLock lock(&mu_);
    pending_.push_back(probe);
  }
  // Removes the probe, as the scheduler does once it is reported or its search ended.
  void Remove(const std::string& probe) {
    absl::MutexLock lock(&mu_);
    pending_.erase(Find(probe));
  }
  void SetRunning(const std::string& probe, bool on_reserved_workers) {
    absl::MutexLock lock(&mu_);
    auto found = Find(probe);
    found->running = true;
    found->unplaceable = false;
    found->on_reserved_workers = on_reserved_workers;
  }
  std::vector<std::string> pending() {
    absl::MutexLock lock(&mu_);
    std::vector<std::string> names;
    for (const PendingProbe& probe : pending_) names.push_back(probe.probe);
    return names;
  }
  // "LaunchEnded PROBE: REASON" and "LaunchRefused PROBE: REASON", in the order made.
  std::vector<std::string> calls() {
    absl::MutexLock lock(&mu_);
    return calls_;
  }

  std::vector<PendingProbe> PendingProbes() override {
    absl::MutexLock lock(&mu_);
    return pending_;
  }
  absl::Status LaunchEnded(absl::string_view probe, const std::string& reason) override {
    return Ended("LaunchEnded", probe, reason);
  }
  absl::Status LaunchRefused(absl::string_view probe, const std::string& reason) override {
    return Ended("LaunchRefused", probe, reason);
  }

 private:
  std::vector<PendingProbe>::iterator Find(absl::string_view probe)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return std::find_if(pending_.begin(), pending_.end(),
                        [probe](const PendingProbe& pending) { return pending.probe == probe; });
  }

  absl::Status Ended(absl::string_view call, absl::string_view probe, const std::string& reason) {
    absl::MutexLock lock(&mu_);
    calls_.push_back(absl::StrCat(call, " ", probe, ": ", reason));
    const absl::StatusOr<ProbeId> id = ParseProbeName("probe", probe);
    if (!id.ok()) return id.status();
    auto found = Find(probe);
    if (found == pending_.end() || (found->running && !found->on_reserved_workers)) {
      return absl::OkStatus();
    }
    if (id->attempt >= max_attempts_) {
      pending_.erase(found);
      return absl::OkStatus();
    }
    found->probe = ProbeName(id->search_id, id->candidate, id->attempt + 1);
    found->running = false;
    found->on_reserved_workers = false;
    found->unplaceable = true;
    return absl::OkStatus();
  }

  const int64_t max_attempts_;
  absl::Mutex mu_;
  std::vector<PendingProbe> pending_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> calls_ ABSL_GUARDED_BY(mu_);
};

// searches/{search}/candidates/{candidate}/probes/{attempt}, queued where no live worker can
// host it: one replica of 8 ranks in tensor parallel groups of 2, on 8-GPU nodes, for at most
// 10 minutes.
PendingProbe Queued(int64_t search, int64_t candidate, int64_t attempt = 1) {
  PendingProbe probe;
  probe.probe = ProbeName(search, candidate, attempt);
  probe.unplaceable = true;
  probe.backend = "sim";
  probe.ranks = 8;
  probe.group_size = 2;
  probe.gpus_per_node = 8;
  probe.gpu_type = "h100-80gb";
  probe.deadline = absl::Minutes(10);
  return probe;
}

constexpr char kProbe[] = "searches/1/candidates/0/probes/1";

class SlurmLauncherTest : public ::testing::Test {
 protected:
  SlurmLauncher::Options LauncherOptions() {
    SlurmLauncher::Options options;
    options.job.server_address = "scheduler:50051";
    options.job.worker_binary = "/opt/paratune/bin/paratune-worker";
    options.job.worker_args = {"--sim_gpus=8"};
    options.job.request_gpus = false;
    options.job.startup_allowance = absl::Minutes(5);
    // Rounds run when a test calls Reconcile.
    options.poll_interval = absl::Hours(1);
    options.max_jobs = 2;
    options.clock = &clock_;
    options.run_command = slurm_.Runner();
    return options;
  }

  std::unique_ptr<SlurmLauncher> StartLauncher() {
    absl::StatusOr<std::unique_ptr<SlurmLauncher>> launcher =
        SlurmLauncher::Start(LauncherOptions(), &target_);
    EXPECT_TRUE(launcher.ok()) << launcher.status();
    return launcher.ok() ? *std::move(launcher) : nullptr;
  }

  // Queues candidates 0 .. n-1 of `search`.
  void QueueSearch(int64_t search, int64_t n) {
    for (int64_t candidate = 0; candidate < n; ++candidate) target_.Add(Queued(search, candidate));
  }

  FakeClock clock_;
  FakeSlurm slurm_;
  FakeLaunchTarget target_{/*max_attempts=*/2};
};

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
