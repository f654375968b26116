#include "server/slurm/slurm_launcher.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "server/core/resource_names.h"

namespace paratune {
namespace {

constexpr int64_t kMaxJobs = 10'000;
// What Stats::jobs_ended counts a job as when Slurm no longer knows how it ended.
constexpr char kUnknownEnding[] = "UNKNOWN";
// How long a started job whose probe is no longer wanted may take to end by itself before it
// is cancelled: its workers exit once their probe has ended, reported or cancelled.
constexpr absl::Duration kEndByItselfGrace = absl::Seconds(10);

}  // namespace

absl::Status SlurmLauncher::CheckOptions(const Options& options) {
  PT_RETURN_IF_ERROR(ValidateProbeJobOptions(options.job));
  if (options.poll_interval <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "poll_interval (", absl::FormatDuration(options.poll_interval), ") must be > 0"));
  }
  if (options.max_jobs < 1 || options.max_jobs > kMaxJobs) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_jobs (", options.max_jobs, ") must be in [1, ", kMaxJobs, "]"));
  }
  if (options.command_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "command_timeout (", absl::FormatDuration(options.command_timeout), ") must be > 0"));
  }
  return absl::OkStatus();
}

namespace {

// The queued probes that wait for a job, taking turns between searches (the first of each
// search, then the second, ...), so that one large search does not take every job slot.
std::vector<const PendingProbe*> LaunchOrder(const std::vector<PendingProbe>& pending) {
  // PendingProbes lists each search's probes together.
  std::vector<std::vector<const PendingProbe*>> by_search;
  int64_t last_search = 0;
  size_t turns = 0;
  for (const PendingProbe& probe : pending) {
    if (probe.running || !probe.unplaceable) continue;
    const absl::StatusOr<ProbeId> id = ParseProbeName("probe", probe.probe);
    if (!id.ok()) continue;
    if (by_search.empty() || id->search_id != last_search) by_search.emplace_back();
    last_search = id->search_id;
    by_search.back().push_back(&probe);
    turns = std::max(turns, by_search.back().size());
  }
  std::vector<const PendingProbe*> order;
  for (size_t turn = 0; turn < turns; ++turn) {
    for (const auto& probes : by_search) {
      if (turn < probes.size()) order.push_back(probes[turn]);
    }
  }
  return order;
}

}  // namespace

SlurmLauncher::SlurmLauncher(Options options, LaunchTarget* target)
    : options_(std::move(options)),
      target_(target),
      clock_(options_.clock != nullptr ? options_.clock : RealClock()),
      client_(options_.commands, options_.run_command
                                     ? options_.run_command
                                     : SubprocessCommandRunner(options_.command_timeout, &stop_)) {}

absl::StatusOr<std::unique_ptr<SlurmLauncher>> SlurmLauncher::Start(Options options,
                                                                    LaunchTarget* target) {
  PT_RETURN_IF_ERROR(CheckOptions(options));
  if (options.job.server_address.empty()) {
    return absl::InvalidArgumentError("job.server_address (\"\") must be host:port");
  }
  std::unique_ptr<SlurmLauncher> launcher(new SlurmLauncher(std::move(options), target));
  if (absl::Status status = launcher->Reconcile(); !status.ok()) {
    return absl::UnavailableError(
        absl::StrCat("the Slurm launcher's first look at Slurm failed: ", status.message()));
  }
  SlurmLauncher* self = launcher.get();
  launcher->poller_ = std::thread([self] { self->PollUntilStopped(); });
  return launcher;
}

SlurmLauncher::~SlurmLauncher() { Stop(); }

void SlurmLauncher::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (!stop_.HasBeenNotified()) stop_.Notify();
  if (poller_.joinable()) poller_.join();
}

void SlurmLauncher::OnProbesQueued() {
  absl::MutexLock lock(&mu_);
  woken_ = true;
}

void SlurmLauncher::PollUntilStopped() {
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      auto woken_or_stopping = [this] {
        mu_.AssertHeld();
        return woken_ || stopping_;
      };
      mu_.AwaitWithTimeout(absl::Condition(&woken_or_stopping), options_.poll_interval);
      if (stopping_) return;
      woken_ = false;
    }
    if (absl::Status status = Reconcile(); !status.ok()) {
      Log(LogLevel::kWarning, "following Slurm jobs failed; retrying at the next round",
          {{"error", status.ToString()}});
    }
  }
}

absl::Status SlurmLauncher::Reconcile() {
  absl::MutexLock round(&round_mu_);
  absl::StatusOr<std::vector<SlurmClient::Job>> listed = client_.ListJobs();
  if (!listed.ok()) {
    // Nothing can be said about the jobs, so nothing is decided.
    CountCommandError("squeue");
    return listed.status();
  }
  absl::Status first_error;
  auto note = [&first_error](const absl::Status& status) {
    if (first_error.ok()) first_error = status;
  };

  absl::flat_hash_map<int64_t, const SlurmClient::Job*> listed_jobs;
  for (const SlurmClient::Job& job : *listed) {
    if (ProbeOfJobName(options_.job.job_name_prefix, job.name).has_value()) {
      listed_jobs[job.id] = &job;
    }
  }
  std::vector<int64_t> ended;
  for (const auto& [id, job] : jobs_) {
    if (!listed_jobs.contains(id)) ended.push_back(id);
  }
  for (int64_t id : ended) {
    note(JobEnded(id, jobs_.at(id)));
    jobs_.erase(id);
  }
  const absl::Time now = clock_->Now();
  for (const auto& [id, listed_job] : listed_jobs) {
    auto [it, found_now] = jobs_.try_emplace(id);
    Job& job = it->second;
    if (found_now) {
      // Submitted by an earlier run of the server, or by this one when sbatch timed out
      // after Slurm had taken the job.
      const ProbeId probe = *ProbeOfJobName(options_.job.job_name_prefix, listed_job->name);
      job.name = listed_job->name;
      job.probe = ProbeName(probe.search_id, probe.candidate, probe.attempt);
      Log(LogLevel::kInfo, "following a Slurm job found in squeue",
          {{"job", absl::StrCat(id)}, {"name", job.name}, {"state", listed_job->state}});
    }
    job.state = listed_job->state;
    if (job.state == "RUNNING" && job.running_since == absl::InfiniteFuture()) {
      job.running_since = now;
    }
  }

  const std::vector<PendingProbe> pending = target_->PendingProbes();
  absl::flat_hash_map<std::string, const PendingProbe*> pending_by_name;
  for (const PendingProbe& probe : pending) pending_by_name[probe.probe] = &probe;
  absl::flat_hash_set<std::string> launched;
  for (auto& [id, job] : jobs_) {
    launched.insert(job.probe);
    if (!job.cancelled_because.empty()) continue;
    auto found = pending_by_name.find(job.probe);
    std::string unwanted;
    if (found == pending_by_name.end()) {
      unwanted =
          "its probe is no longer queued or running (its search ended, or the probe "
          "was reported or re-queued as another attempt)";
    } else if (found->second->running && !found->second->on_reserved_workers) {
      unwanted = "other workers run its probe";
    }
    if (unwanted.empty()) {
      job.unwanted_since = absl::InfiniteFuture();
    } else if (job.unwanted_since == absl::InfiniteFuture()) {
      job.unwanted_since = now;
    }
    if (!unwanted.empty() &&
        (job.state == "PENDING" || now - job.unwanted_since >= kEndByItselfGrace)) {
      note(CancelJob(id, job, unwanted));
    } else if (found != pending_by_name.end() && !found->second->running &&
               now - job.running_since > options_.job.startup_allowance) {
      note(CancelJob(id, job,
                     absl::StrCat("its workers did not take the probe within ",
                                  absl::FormatDuration(options_.job.startup_allowance),
                                  " of the job starting (see the candidate's waiting_reason)")));
    }
  }

  int64_t in_slurm = static_cast<int64_t>(jobs_.size());
  for (const PendingProbe* probe : LaunchOrder(pending)) {
    if (in_slurm >= options_.max_jobs || stop_.HasBeenNotified()) break;
    if (launched.contains(probe->probe)) continue;
    note(SubmitJob(*probe));
    ++in_slurm;
  }

  absl::MutexLock lock(&mu_);
  stats_.jobs.clear();
  for (const auto& [id, job] : jobs_) ++stats_.jobs[job.state];
  return first_error;
}

absl::Status SlurmLauncher::JobEnded(int64_t id, const Job& job) {
  absl::StatusOr<SlurmClient::Ending> ending = client_.FinalState(id);
  std::string reason = absl::StrCat("slurm job ", id, " (", job.name, ") ended ");
  std::string state = kUnknownEnding;
  if (ending.ok()) {
    state = ending->state;
    absl::StrAppend(&reason, state, " with exit code ", ending->exit_code);
  } else {
    if (ending.status().code() != absl::StatusCode::kNotFound) CountCommandError("scontrol");
    absl::StrAppend(&reason, "(how is unknown: ", ending.status().message(), ")");
  }
  if (!job.cancelled_because.empty()) {
    absl::StrAppend(&reason, "; paratune-server cancelled it: ", job.cancelled_because);
  }
  const bool expected = state == "COMPLETED" || !job.cancelled_because.empty();
  Log(expected ? LogLevel::kInfo : LogLevel::kWarning, "Slurm job ended",
      {{"job", absl::StrCat(id)}, {"probe", job.probe}, {"state", state}, {"reason", reason}});
  {
    absl::MutexLock lock(&mu_);
    ++stats_.jobs_ended[state];
  }
  return target_->LaunchEnded(job.probe, reason);
}

absl::Status SlurmLauncher::CancelJob(int64_t id, Job& job, const std::string& why) {
  if (absl::Status status = client_.Cancel(id); !status.ok()) {
    CountCommandError("scancel");
    return status;
  }
  job.cancelled_because = why;
  Log(LogLevel::kInfo, "Slurm job cancelled",
      {{"job", absl::StrCat(id)}, {"probe", job.probe}, {"reason", why}});
  return absl::OkStatus();
}

absl::Status SlurmLauncher::SubmitJob(const PendingProbe& probe) {
  const absl::StatusOr<ProbeJob> planned = MakeProbeJob(options_.job, probe);
  const absl::StatusOr<int64_t> id =
      planned.ok() ? client_.Submit(planned->sbatch_args) : planned.status();
  // Stop cancelled sbatch: nothing was refused.
  if (!id.ok() && stop_.HasBeenNotified()) return id.status();
  if (!id.ok()) {
    if (planned.ok()) {
      absl::MutexLock lock(&mu_);
      ++stats_.submit_failures;
    }
    Log(LogLevel::kWarning, "cannot submit a probe's Slurm job",
        {{"probe", probe.probe}, {"error", id.status().ToString()}});
    // The message names neither the probe nor the attempt, so that the target can tell the
    // same refusal repeated.
    const std::string reason =
        absl::StrCat("its Slurm job could not be submitted: ", id.status().message());
    // A refusal (SlurmClient::Submit's FAILED_PRECONDITION) is repeated for the next job
    // alike; so is a probe that cannot be a job. An sbatch that timed out, or printed no job
    // id, may have left the job with Slurm: only the attempt counts.
    const bool refused =
        !planned.ok() || id.status().code() == absl::StatusCode::kFailedPrecondition;
    if (refused) return target_->LaunchRefused(probe.probe, reason);
    return target_->LaunchEnded(probe.probe, reason);
  }
  Job& job = jobs_[*id];
  job.name = planned->name;
  job.probe = probe.probe;
  job.state = "PENDING";
  {
    absl::MutexLock lock(&mu_);
    ++stats_.jobs_submitted;
  }
  Log(LogLevel::kInfo, "Slurm job submitted",
      {{"job", absl::StrCat(*id)},
       {"name", job.name},
       {"probe", probe.probe},
       {"ranks", absl::StrCat(probe.ranks)},
       {"nodes", absl::StrCat(planned->nodes)}});
  return absl::OkStatus();
}

void SlurmLauncher::CountCommandError(const std::string& program) {
  absl::MutexLock lock(&mu_);
  ++stats_.command_errors[program];
}

SlurmLauncher::Stats SlurmLauncher::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

}  // namespace paratune
