#include "server/slurm/slurm_launcher_test_fixture.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "server/core/launch_target.h"
#include "server/core/resource_names.h"
#include "server/slurm/slurm_client.h"
#include "server/slurm/slurm_launcher.h"

namespace paratune {

CommandRunner FakeSlurm::Runner() {
  return [this](const std::vector<std::string>& argv) { return Answer(argv); };
}

void FakeSlurm::Run(int64_t id) { Set(id, "RUNNING", "0:0"); }

void FakeSlurm::End(int64_t id, const std::string& state, const std::string& exit_code) {
  Set(id, state, exit_code);
}

void FakeSlurm::RefuseSubmissions(const std::string& message) {
  absl::MutexLock lock(&mu_);
  refusal_ = message;
}

void FakeSlurm::AnswerSubmissions(std::optional<absl::StatusOr<CommandOutput>> output) {
  absl::MutexLock lock(&mu_);
  sbatch_answer_ = std::move(output);
}

void FakeSlurm::SetUnreachable(bool unreachable) {
  absl::MutexLock lock(&mu_);
  unreachable_ = unreachable;
}

std::map<int64_t, FakeSlurm::Job> FakeSlurm::jobs() {
  absl::MutexLock lock(&mu_);
  return jobs_;
}

std::vector<std::string> FakeSlurm::calls(absl::string_view program) {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> matching;
  for (const std::string& call : calls_) {
    if (absl::StartsWith(call, absl::StrCat(program, " "))) matching.push_back(call);
  }
  return matching;
}

absl::StatusOr<CommandOutput> FakeSlurm::Answer(const std::vector<std::string>& argv) {
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

bool FakeSlurm::Ended(const std::string& state) {
  return state != "PENDING" && state != "RUNNING" && state != "COMPLETING";
}

void FakeSlurm::Set(int64_t id, const std::string& state, const std::string& exit_code) {
  absl::MutexLock lock(&mu_);
  jobs_.at(id).state = state;
  jobs_.at(id).exit_code = exit_code;
}

void FakeLaunchTarget::Add(const PendingProbe& probe) {
  absl::MutexLock lock(&mu_);
  pending_.push_back(probe);
}

void FakeLaunchTarget::Remove(const std::string& probe) {
  absl::MutexLock lock(&mu_);
  pending_.erase(Find(probe));
}

void FakeLaunchTarget::SetRunning(const std::string& probe, bool on_reserved_workers) {
  absl::MutexLock lock(&mu_);
  auto found = Find(probe);
  found->running = true;
  found->unplaceable = false;
  found->on_reserved_workers = on_reserved_workers;
}

std::vector<std::string> FakeLaunchTarget::pending() {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> names;
  for (const PendingProbe& probe : pending_) names.push_back(probe.probe);
  return names;
}

std::vector<std::string> FakeLaunchTarget::calls() {
  absl::MutexLock lock(&mu_);
  return calls_;
}

std::vector<PendingProbe> FakeLaunchTarget::PendingProbes() {
  absl::MutexLock lock(&mu_);
  return pending_;
}

absl::Status FakeLaunchTarget::LaunchEnded(absl::string_view probe, const std::string& reason) {
  return Ended("LaunchEnded", probe, reason);
}

absl::Status FakeLaunchTarget::LaunchRefused(absl::string_view probe, const std::string& reason) {
  return Ended("LaunchRefused", probe, reason);
}

std::vector<PendingProbe>::iterator FakeLaunchTarget::Find(absl::string_view probe) {
  return std::find_if(pending_.begin(), pending_.end(),
                      [probe](const PendingProbe& pending) { return pending.probe == probe; });
}

absl::Status FakeLaunchTarget::Ended(absl::string_view call, absl::string_view probe,
                                     const std::string& reason) {
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

PendingProbe Queued(int64_t search, int64_t candidate, int64_t attempt) {
  PendingProbe probe;
  probe.probe = ProbeName(search, candidate, attempt);
  probe.unplaceable = true;
  probe.backend = "sim";
  probe.ranks = 8;
  probe.group_size = 2;
  probe.gpus_per_node = 8;
  probe.deadline = absl::Minutes(10);
  return probe;
}

SlurmLauncher::Options SlurmLauncherTest::LauncherOptions() {
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

std::unique_ptr<SlurmLauncher> SlurmLauncherTest::StartLauncher() {
  absl::StatusOr<std::unique_ptr<SlurmLauncher>> launcher =
      SlurmLauncher::Start(LauncherOptions(), &target_);
  EXPECT_TRUE(launcher.ok()) << launcher.status();
  return launcher.ok() ? *std::move(launcher) : nullptr;
}

void SlurmLauncherTest::QueueSearch(int64_t search, int64_t n) {
  for (int64_t candidate = 0; candidate < n; ++candidate) target_.Add(Queued(search, candidate));
}

}  // namespace paratune
