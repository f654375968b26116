// The probe-as-job mode of paratune-server (--launcher=slurm; DESIGN.md §10): rather than
// wait for long-lived workers, the server submits one Slurm job for each queued probe that no
// live worker can host. The job (server/core/probe_job.h) starts one paratune-worker per node,
// reserved for that probe attempt (kProbeReservationLabel); the scheduler places the probe on
// them only (as a gang when it spans nodes), they run it, report and exit, and the job ends.
//
// The launcher sees the scheduler through LaunchTarget (server/core/launch_target.h) and is told
// of queued probes as a ProbesQueuedListener. Each round (every poll interval, and at once
// when probes are queued) it lists the jobs named after its prefix with squeue and compares
// them with the target's pending probes:
//   - a job that left squeue has ended: how (sacct, else scontrol) goes to
//     LaunchTarget::LaunchEnded, which counts the attempt of a probe its job never started
//     and declares the job's workers lost;
//   - a job whose probe is no longer pending (search cancelled or ended, probe reported or
//     re-queued as a later attempt) or runs on other workers is cancelled (scancel): at once
//     while it is pending in Slurm, after a grace once it has started, since its workers
//     leave by themselves once their probe has ended; so is a job whose running workers
//     have not taken the probe within the startup allowance;
//   - a queued probe that no live worker set can host and that has no job gets one, within
//     max_jobs jobs, taking turns between searches. A job that sbatch refuses (it exits
//     non-zero: a bad partition, account or GRES), or a probe that cannot be a job at all,
//     goes to LaunchTarget::LaunchRefused with sbatch's message as it printed it (or why the
//     probe cannot be a job) and no text of the probe's own, so that identical refusals read
//     the same: the scheduler fails the search once ProbeSettings.max_launch_failures
//     refusals in a row said the same, rather than spend every probe's attempts on it.
//     Other sbatch failures (it timed out or could not start, or printed no job id) refused
//     nothing for sure, and Slurm may have taken the job: they go to LaunchEnded, which
//     counts the attempt, and a job found later under the attempt's name is cancelled as
//     unwanted.
// The jobs are the launcher's only state: a restarted server finds its jobs by name.
#ifndef PARATUNE_SERVER_SLURM_SLURM_LAUNCHER_H_
#define PARATUNE_SERVER_SLURM_SLURM_LAUNCHER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "server/core/launch_target.h"
#include "server/core/probe_job.h"
#include "server/core/probes_queued_listener.h"
#include "server/slurm/slurm_client.h"

namespace paratune {

// Thread-safe.
class SlurmLauncher : public ProbesQueuedListener {
 public:
  struct Options {
    // How the jobs look: names, sbatch arguments, the worker they start.
    ProbeJobOptions job;
    // Slurm's programs.
    SlurmClient::Commands commands;
    // How often Slurm and the scheduler are compared when nothing wakes the launcher.
    absl::Duration poll_interval = absl::Seconds(5);
    // Jobs in Slurm at once, pending or running; 1 .. 10,000.
    int64_t max_jobs = 16;
    // Longest run of one Slurm command.
    absl::Duration command_timeout = absl::Seconds(60);
    // Source of time for the startup allowance; RealClock() when null. Not owned.
    Clock* clock = nullptr;
    // Runs Slurm's programs; SubprocessCommandRunner when empty. Tests script Slurm with it.
    CommandRunner run_command;
  };

  // Counts for monitoring (server/slurm/slurm_launcher_metrics.h).
  struct Stats {
    // Jobs submitted, and sbatch calls that failed.
    int64_t jobs_submitted = 0;
    int64_t submit_failures = 0;
    // Jobs in Slurm now, by Slurm state (PENDING, RUNNING, COMPLETING, ...).
    std::map<std::string, int64_t> jobs;
    // Jobs that ended, by final Slurm state (COMPLETED, FAILED, CANCELLED, TIMEOUT, ...;
    // UNKNOWN when Slurm had forgotten the job).
    std::map<std::string, int64_t> jobs_ended;
    // squeue, scancel, sacct/scontrol calls that failed or could not run, by program.
    std::map<std::string, int64_t> command_errors;
  };

  // INVALID_ARGUMENT naming the option (job.* by the name within ProbeJobOptions) and its
  // value. job.server_address is not checked: a server fills it in once it listens.
  static absl::Status CheckOptions(const Options& options);

  // Checks the options (job.server_address must be set), runs a first round (which finds
  // the jobs of a previous run of the server by name) and starts polling. `target` must
  // outlive the launcher. INVALID_ARGUMENT naming the option; UNAVAILABLE when squeue fails
  // (Slurm unreachable, the programs missing or misconfigured).
  static absl::StatusOr<std::unique_ptr<SlurmLauncher>> Start(Options options,
                                                              LaunchTarget* target);

  SlurmLauncher(const SlurmLauncher&) = delete;
  SlurmLauncher& operator=(const SlurmLauncher&) = delete;
  // Stop()s. The jobs are left to finish: a restarted server follows them again.
  ~SlurmLauncher() override;

  // Ends polling, cancelling a Slurm command in flight. Idempotent.
  void Stop();

  // Runs a round at once, unless one is running: then the next one starts when it ends.
  // Returns at once; never calls the target.
  void OnProbesQueued() override;

  // One round (see the file comment); the polling thread runs them, tests call it. Returns
  // squeue's error, when nothing else was done, or the first other Slurm or target error
  // (the round goes on past those).
  absl::Status Reconcile();

  Stats stats() const;

 private:
  // A job of this launcher that Slurm still lists, or that was just submitted.
  struct Job {
    std::string name;
    // The probe it was submitted for (PendingProbe::probe).
    std::string probe;
    std::string state;
    // When the launcher first saw it RUNNING; InfiniteFuture before.
    absl::Time running_since = absl::InfiniteFuture();
    // Since when its probe has not been wanted (no longer pending, or run by other
    // workers); InfiniteFuture while it is.
    absl::Time unwanted_since = absl::InfiniteFuture();
    // Why this launcher cancelled it; empty while it has not.
    std::string cancelled_because;
  };

  SlurmLauncher(Options options, LaunchTarget* target);

  void PollUntilStopped();
  // Reports how the job ended to the target.
  absl::Status JobEnded(int64_t id, const Job& job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(round_mu_);
  absl::Status CancelJob(int64_t id, Job& job, const std::string& why)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(round_mu_);
  // Submits the probe's job; tells the target when it cannot (see the file comment).
  absl::Status SubmitJob(const PendingProbe& probe) ABSL_EXCLUSIVE_LOCKS_REQUIRED(round_mu_);
  void CountCommandError(const std::string& program);

  const Options options_;
  LaunchTarget* const target_;
  Clock* const clock_;
  // Notified by Stop: cancels a Slurm command in flight.
  absl::Notification stop_;
  SlurmClient client_;

  // Held for a whole round: rounds never overlap.
  absl::Mutex round_mu_;
  absl::flat_hash_map<int64_t, Job> jobs_ ABSL_GUARDED_BY(round_mu_);

  mutable absl::Mutex mu_ ABSL_ACQUIRED_AFTER(round_mu_);
  bool woken_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  Stats stats_ ABSL_GUARDED_BY(mu_);

  std::thread poller_;
};

}  // namespace paratune

#endif  // PARATUNE_SERVER_SLURM_SLURM_LAUNCHER_H_
