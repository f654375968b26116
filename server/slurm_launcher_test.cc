#include "server/slurm_launcher.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/test_requests.h"
#include "server/fake_clock.h"
#include "server/sqlite_search_store.h"

namespace paratune {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
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
  // Makes the next sbatch calls fail with `message`, or succeed again when empty.
  void RefuseSubmissions(const std::string& message) {
    absl::MutexLock lock(&mu_);
    refusal_ = message;
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
  bool unreachable_ ABSL_GUARDED_BY(mu_) = false;
  absl::Notification first_submission_;
};

v1::RegisterWorkerRequest Worker(const std::string& reserved_for = "") {
  v1::RegisterWorkerRequest request;
  request.set_hostname("node");
  for (int i = 0; i < 8; ++i) {
    v1::Gpu& gpu = *request.add_gpus();
    gpu.set_index(i);
    gpu.set_name("simulated H100-80GB");
    gpu.set_memory_bytes(85'520'809'984);
  }
  request.add_backends("sim");
  if (!reserved_for.empty()) (*request.mutable_labels())[kProbeReservationLabel] = reserved_for;
  return request;
}

v1::ProbeResult OkResult() {
  v1::ProbeResult result;
  result.set_outcome(v1::PROBE_OK);
  result.set_backend("sim");
  result.set_simulated(true);
  result.add_step_times_seconds(1.0);
  result.set_mean_step_time_seconds(1.0);
  result.set_tokens_per_second(1000);
  result.set_model_tflops_per_gpu(100);
  return result;
}

class SlurmLauncherTest : public ::testing::Test {
 protected:
  SlurmLauncherTest() {
    Scheduler::Options options;
    options.clock = &clock_;
    scheduler_ = *Scheduler::Create(std::move(options), *SqliteSearchStore::Open(":memory:"));
  }

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
        SlurmLauncher::Start(LauncherOptions(), scheduler_.get());
    EXPECT_TRUE(launcher.ok()) << launcher.status();
    return launcher.ok() ? *std::move(launcher) : nullptr;
  }

  v1::Search Create(const v1::CreateSearchRequest& request) {
    absl::StatusOr<v1::Search> search = scheduler_->CreateSearch(request);
    EXPECT_TRUE(search.ok()) << search.status();
    return search.ok() ? *search : v1::Search();
  }

  // The candidate called searches/1/candidates/{n}.
  v1::Candidate Candidate(int64_t n) {
    const v1::Search search = *scheduler_->GetSearch("searches/1");
    for (const v1::Candidate& candidate : search.candidates()) {
      if (candidate.name() == absl::StrCat("searches/1/candidates/", n)) return candidate;
    }
    ADD_FAILURE() << "no candidate " << n;
    return v1::Candidate();
  }

  std::vector<std::string> Events() {
    v1::ListSearchEventsRequest request;
    request.set_name("searches/1");
    request.set_page_size(1000);
    const absl::StatusOr<v1::ListSearchEventsResponse> events =
        scheduler_->ListSearchEvents(request);
    EXPECT_TRUE(events.ok()) << events.status();
    std::vector<std::string> texts;
    for (const v1::SearchEvent& event : events->events()) texts.push_back(event.text());
    return texts;
  }

  // What happens once Slurm starts `job`: its srun starts a worker, reserved for the job's
  // probe, which registers and takes the probe. Returns the worker's name.
  std::string StartJob(int64_t job, const std::string& probe) {
    slurm_.Run(job);
    absl::StatusOr<v1::RegisterWorkerResponse> registered =
        scheduler_->RegisterWorker(Worker(probe));
    EXPECT_TRUE(registered.ok()) << registered.status();
    if (!registered.ok()) return "";
    absl::StatusOr<Scheduler::Acquisition> acquired =
        scheduler_->TryAcquireProbe(registered->name());
    EXPECT_TRUE(acquired.ok() && acquired->assignment.has_value() &&
                acquired->assignment->name() == probe);
    return registered->name();
  }

  void ReportOk(const std::string& worker, const std::string& probe) {
    v1::ReportProbeRequest report;
    report.set_worker(worker);
    report.set_probe(probe);
    *report.mutable_result() = OkResult();
    EXPECT_TRUE(scheduler_->ReportProbe(report).ok());
  }

  FakeClock clock_;
  FakeSlurm slurm_;
  std::unique_ptr<Scheduler> scheduler_;
};

TEST_F(SlurmLauncherTest, SubmitsAJobForEachProbeNoWorkerCanHostWithinMaxJobs) {
  Create(SmallSimSearch(3));
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
  const SlurmLauncher::Stats stats = launcher->stats();
  EXPECT_EQ(stats.jobs_submitted, 2);
  EXPECT_EQ(stats.jobs.at("PENDING"), 2);
}

TEST_F(SlurmLauncherTest, ProbesThatLiveWorkersCanHostGetNoJob) {
  ASSERT_TRUE(scheduler_->RegisterWorker(Worker()).ok());
  Create(SmallSimSearch(3));
  std::unique_ptr<SlurmLauncher> launcher = StartLauncher();
  ASSERT_NE(launcher, nullptr);
  EXPECT_THAT(slurm_.calls("sbatch"), IsEmpty());
}

TEST_F(SlurmLauncherTest, ProbeRunsOnItsJobsWorkerAndTheJobEndsWithIt) {
  Create(SmallSimSearch(1));
  std::unique_ptr<SlurmLauncher> launcher = StartLauncher();
  ASSERT_NE(launcher, nullptr);
  const std::string probe = "searches/1/candidates/0/probes/1";
  const std::string worker = StartJob(1, probe);
  ASSERT_TRUE(launcher->Reconcile().ok());
  EXPECT_THAT(slurm_.calls("scancel"), IsEmpty());

  ReportOk(worker, probe);
  slurm_.End(1, "COMPLETED", "0:0");
  ASSERT_TRUE(launcher->Reconcile().ok());

  EXPECT_EQ(scheduler_->GetSearch("searches/1")->state(), v1::SUCCEEDED);
  EXPECT_THAT(slurm_.calls("sbatch"), SizeIs(1));
  EXPECT_THAT(slurm_.calls("scontrol"), ElementsAre("scontrol show job 1"));
  const SlurmLauncher::Stats stats = launcher->stats();
  EXPECT_EQ(stats.jobs_ended.at("COMPLETED"), 1);
  EXPECT_THAT(stats.jobs, IsEmpty());
  // The job's worker went with it.
  EXPECT_EQ(scheduler_->ListWorkers()->workers(0).state(), v1::WORKER_LOST);
}

TEST_F(SlurmLauncherTest, JobThatEndsBeforeItsProbeStartedCostsAnAttemptAndIsReplaced) {
  Create(SmallSimSearch(1));
  std::unique_ptr<SlurmLauncher> launcher = StartLauncher();
  ASSERT_NE(launcher, nullptr);
  slurm_.End(1, "FAILED", "127:0");
  ASSERT_TRUE(launcher->Reconcile().ok());
  EXPECT_EQ(Candidate(0).attempts(), 1);
  EXPECT_EQ(Candidate(0).state(), v1::CANDIDATE_QUEUED);
  EXPECT_THAT(Events(),
              Contains(HasSubstr("re-queued after attempt 1 of 2: slurm job 1 (paratune-s1-c0-a1) "
                                 "ended FAILED with exit code 127:0")));
  // The next attempt has its own job, submitted in the same round.
  EXPECT_EQ(slurm_.jobs()[2].name, "paratune-s1-c0-a2");

  slurm_.End(2, "NODE_FAIL", "0:0");
  ASSERT_TRUE(launcher->Reconcile().ok());
  const v1::Candidate failed = Candidate(0);
  EXPECT_EQ(failed.state(), v1::CANDIDATE_PROBED);
  EXPECT_EQ(failed.probe_result().outcome(), v1::PROBE_INFRA_ERROR);
  EXPECT_THAT(failed.probe_result().message(), HasSubstr("ended NODE_FAIL"));
  EXPECT_EQ(scheduler_->GetSearch("searches/1")->state(), v1::FAILED);
  EXPECT_THAT(slurm_.calls("sbatch"), SizeIs(2));
}

TEST_F(SlurmLauncherTest, JobEndingUnderItsRunningProbeRequeuesItAtOnce) {
  Create(SmallSimSearch(1));
  std::unique_ptr<SlurmLauncher> launcher = StartLauncher();
  ASSERT_NE(launcher, nullptr);
  StartJob(1, "searches/1/candidates/0/probes/1");
  slurm_.End(1, "TIMEOUT", "0:15");
  ASSERT_TRUE(launcher->Reconcile().ok());
  EXPECT_EQ(Candidate(0).state(), v1::CANDIDATE_QUEUED);
  EXPECT_EQ(Candidate(0).attempts(), 1);
  EXPECT_THAT(Events(), Contains(HasSubstr("slurm job 1 (paratune-s1-c0-a1) ended TIMEOUT")));
  EXPECT_EQ(slurm_.jobs()[2].name, "paratune-s1-c0-a2");
}

TEST_F(SlurmLauncherTest, CancelledSearchCancelsItsJobs) {
  Create(SmallSimSearch(3));
  std::unique_ptr<SlurmLauncher> launcher = StartLauncher();
  ASSERT_NE(launcher, nullptr);
  slurm_.Run(1);
  ASSERT_TRUE(scheduler_->CancelSearch("searches/1").ok());
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
}

TEST_F(SlurmLauncherTest, JobIsCancelledWhenOtherWorkersTakeItsProbe) {
  Create(SmallSimSearch(1));
  std::unique_ptr<SlurmLauncher> launcher = StartLauncher();
  ASSERT_NE(launcher, nullptr);
  // A long-lived worker comes before the job starts.
  const std::string worker = scheduler_->RegisterWorker(Worker())->name();
  ASSERT_TRUE(scheduler_->TryAcquireProbe(worker)->assignment.has_value());
  ASSERT_TRUE(launcher->Reconcile().ok());
  EXPECT_THAT(slurm_.calls("scancel"), ElementsAre("scancel 1"));
  // Its ending costs the probe nothing.
  ASSERT_TRUE(launcher->Reconcile().ok());
  EXPECT_EQ(Candidate(0).state(), v1::CANDIDATE_RUNNING);
  EXPECT_EQ(Candidate(0).attempts(), 1);
}

TEST_F(SlurmLauncherTest, StartedJobWhoseProbeEndedIsLeftToEndByItself) {
  Create(SmallSimSearch(1));
  std::unique_ptr<SlurmLauncher> launcher = StartLauncher();
  ASSERT_NE(launcher, nullptr);
  const std::string probe = "searches/1/candidates/0/probes/1";
  ReportOk(StartJob(1, probe), probe);
  ASSERT_TRUE(launcher->Reconcile().ok());
  slurm_.End(1, "COMPLETED", "0:0");
  clock_.Advance(absl::Seconds(1));
  ASSERT_TRUE(launcher->Reconcile().ok());
  EXPECT_THAT(slurm_.calls("scancel"), IsEmpty());
  EXPECT_EQ(launcher->stats().jobs_ended.at("COMPLETED"), 1);
}

TEST_F(SlurmLauncherTest, RunningJobWhoseWorkersDoNotTakeTheProbeIsCancelled) {
  Create(SmallSimSearch(1));
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
  EXPECT_EQ(Candidate(0).attempts(), 1);
  EXPECT_THAT(Events(), Contains(AllOf(HasSubstr("ended CANCELLED"),
                                       HasSubstr("paratune-server cancelled it: its workers did "
                                                 "not take the probe within 5m"))));
}

TEST_F(SlurmLauncherTest, RestartedLauncherFollowsTheJobsItFindsByName) {
  Create(SmallSimSearch(1));
  StartLauncher().reset();
  ASSERT_THAT(slurm_.calls("sbatch"), SizeIs(1));
  // Someone else's job and the workers script's job are left alone.
  slurm_.Runner()({"sbatch", "--parsable", "--job-name=paratune-workers", "--wrap=true"});
  slurm_.Runner()({"sbatch", "--parsable", "--job-name=training", "--wrap=true"});

  std::unique_ptr<SlurmLauncher> restarted = StartLauncher();
  ASSERT_NE(restarted, nullptr);
  EXPECT_THAT(slurm_.calls("sbatch"), SizeIs(3));
  EXPECT_EQ(restarted->stats().jobs.at("PENDING"), 1);
  slurm_.End(1, "FAILED", "1:0");
  ASSERT_TRUE(restarted->Reconcile().ok());
  EXPECT_EQ(Candidate(0).attempts(), 1);
  EXPECT_THAT(slurm_.calls("scancel"), IsEmpty());
  EXPECT_EQ(slurm_.jobs()[4].name, "paratune-s1-c0-a2");
}

TEST_F(SlurmLauncherTest, RefusedSubmissionsCostAttemptsAndSayWhy) {
  Create(SmallSimSearch(1));
  slurm_.RefuseSubmissions(
      "sbatch: error: Batch job submission failed: Invalid partition name specified");
  std::unique_ptr<SlurmLauncher> launcher = StartLauncher();
  ASSERT_NE(launcher, nullptr);
  EXPECT_EQ(Candidate(0).attempts(), 1);
  ASSERT_TRUE(launcher->Reconcile().ok());
  const v1::Candidate failed = Candidate(0);
  EXPECT_EQ(failed.probe_result().outcome(), v1::PROBE_INFRA_ERROR);
  EXPECT_THAT(failed.probe_result().message(),
              HasSubstr("its Slurm job could not be submitted: sbatch exited with code 1: "
                        "sbatch: error: Batch job submission failed: Invalid partition name"));
  EXPECT_EQ(launcher->stats().submit_failures, 2);
}

TEST_F(SlurmLauncherTest, UnreachableSlurmDecidesNothing) {
  Create(SmallSimSearch(1));
  slurm_.SetUnreachable(true);
  EXPECT_EQ(SlurmLauncher::Start(LauncherOptions(), scheduler_.get()).status().code(),
            absl::StatusCode::kUnavailable);
  slurm_.SetUnreachable(false);
  std::unique_ptr<SlurmLauncher> launcher = StartLauncher();
  ASSERT_NE(launcher, nullptr);
  slurm_.SetUnreachable(true);
  const absl::Status status = launcher->Reconcile();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(status.message(), HasSubstr("Unable to contact slurm controller"));
  // The job is not taken for ended while squeue fails.
  EXPECT_EQ(Candidate(0).attempts(), 0);
  EXPECT_EQ(launcher->stats().command_errors.at("squeue"), 1);
  EXPECT_EQ(launcher->stats().jobs.at("PENDING"), 1);
}

TEST_F(SlurmLauncherTest, JobsTakeTurnsBetweenSearches) {
  Create(SmallSimSearch(3));
  Create(SmallSimSearch(3));
  std::unique_ptr<SlurmLauncher> launcher = StartLauncher();
  ASSERT_NE(launcher, nullptr);
  std::map<int64_t, FakeSlurm::Job> jobs = slurm_.jobs();
  ASSERT_THAT(jobs, SizeIs(2));
  EXPECT_EQ(jobs[1].name, "paratune-s1-c0-a1");
  EXPECT_EQ(jobs[2].name, "paratune-s2-c0-a1");
}

TEST_F(SlurmLauncherTest, WakeRunsARoundWithoutWaitingForThePollInterval) {
  std::unique_ptr<SlurmLauncher> launcher = StartLauncher();
  ASSERT_NE(launcher, nullptr);
  Create(SmallSimSearch(1));
  EXPECT_FALSE(slurm_.first_submission().HasBeenNotified());
  launcher->Wake();
  EXPECT_TRUE(slurm_.first_submission().WaitForNotificationWithTimeout(absl::Seconds(30)));
}

TEST_F(SlurmLauncherTest, BadOptionsNameTheOption) {
  SlurmLauncher::Options options = LauncherOptions();
  options.max_jobs = 0;
  EXPECT_EQ(SlurmLauncher::Start(options, scheduler_.get()).status(),
            absl::InvalidArgumentError("max_jobs (0) must be in [1, 10000]"));
  options = LauncherOptions();
  options.poll_interval = absl::ZeroDuration();
  EXPECT_EQ(SlurmLauncher::Start(options, scheduler_.get()).status(),
            absl::InvalidArgumentError("poll_interval (0) must be > 0"));
  options = LauncherOptions();
  options.job.worker_args = {"--labels=a=b"};
  EXPECT_THAT(SlurmLauncher::Start(options, scheduler_.get()).status().message(),
              HasSubstr("worker_args (\"--labels=a=b\")"));
  EXPECT_THAT(slurm_.calls("squeue"), IsEmpty());
}

}  // namespace
}  // namespace paratune
