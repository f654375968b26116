// Slurm's command-line tools as a small typed API for the server's probe-as-job launcher
// (DESIGN.md §10, server/slurm/slurm_launcher.h): sbatch submits, squeue lists the jobs that have
// not finished, sacct (when Slurm keeps accounting) or `scontrol show job` says how one ended,
// scancel cancels. The commands run through a CommandRunner, so that tests can script Slurm.
#ifndef PARATUNE_SERVER_SLURM_SLURM_CLIENT_H_
#define PARATUNE_SERVER_SLURM_SLURM_CLIENT_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

namespace paratune {

// What a command that ran to its exit printed.
struct CommandOutput {
  int exit_code = 0;
  std::string stdout_text;
  std::string stderr_text;
};

// Runs argv (argv[0] a path or a name in PATH) to its exit. An error when it could not be
// started or did not exit by itself (timed out, killed, cancelled); a non-zero exit is not.
using CommandRunner =
    std::function<absl::StatusOr<CommandOutput>(const std::vector<std::string>& argv)>;

// Runs commands with RunSubprocess (common/subprocess.h), each for at most `timeout`, and
// stops one at once when `cancel` is notified. `cancel` must outlive the runner. The errors:
// NOT_FOUND naming a program that cannot be started; UNAVAILABLE when it timed out, was
// cancelled or died of a signal.
CommandRunner SubprocessCommandRunner(absl::Duration timeout, const absl::Notification* cancel);

// Thread-compatible.
class SlurmClient {
 public:
  // The programs to run: names in PATH or paths.
  struct Commands {
    std::string sbatch = "sbatch";
    std::string squeue = "squeue";
    std::string sacct = "sacct";
    std::string scontrol = "scontrol";
    std::string scancel = "scancel";
  };

  // A job squeue lists.
  struct Job {
    int64_t id = 0;
    std::string name;
    // PENDING, RUNNING, COMPLETING, CONFIGURING, SUSPENDED, ...
    std::string state;
    // Why it is in that state, e.g. Resources or Priority while PENDING; "None" when nothing.
    std::string reason;
  };

  // How a job ended.
  struct Ending {
    // COMPLETED, FAILED, CANCELLED, TIMEOUT, NODE_FAIL, OUT_OF_MEMORY, PREEMPTED, ...
    std::string state;
    // exit code:signal of the batch script, e.g. "0:0", "1:0", "0:15".
    std::string exit_code;
  };

  SlurmClient(Commands commands, CommandRunner run);

  // sbatch --parsable `args`; the new job's id. FAILED_PRECONDITION with sbatch's message when
  // it ran and exited non-zero (it refused the job, or could not reach Slurm); UNAVAILABLE when
  // it printed no job id; the runner's error when sbatch did not run or timed out (Slurm may
  // then have taken the job).
  absl::StatusOr<int64_t> Submit(const std::vector<std::string>& args);

  // The jobs of this user that have not finished (squeue --me), in squeue's order.
  // UNAVAILABLE with squeue's message when it fails: then nothing is known about the jobs.
  absl::StatusOr<std::vector<Job>> ListJobs();

  // How the job ended: from sacct, which remembers jobs long after they ended, when Slurm
  // stores accounting and has the job's record; else from `scontrol show job` while
  // slurmctld still remembers the job (MinJobAge, 300 s by default). NOT_FOUND when neither
  // knows the job; UNAVAILABLE when scontrol fails otherwise.
  absl::StatusOr<Ending> FinalState(int64_t job);

  // scancel: Slurm signals the job's steps (SIGTERM, then SIGKILL after KillWait) and ends
  // it CANCELLED. A job that already ended is no error. UNAVAILABLE with scancel's message
  // otherwise.
  absl::Status Cancel(int64_t job);

 private:
  // sacct's answer; NOT_FOUND when it has no record of the job or accounting is off.
  absl::StatusOr<Ending> FinalStateFromAccounting(int64_t job);

  const Commands commands_;
  const CommandRunner run_;
  // Set once sacct said that accounting storage is disabled: it will not start working.
  bool accounting_disabled_ = false;
};

}  // namespace paratune

#endif  // PARATUNE_SERVER_SLURM_SLURM_CLIENT_H_
