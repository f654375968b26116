// A real single-node Slurm cluster on loopback for end-to-end tests: munge, slurmctld and
// slurmd from Debian (slurm-wlm 22.05, munge), configured in a fresh folder under /tmp with
// free ports, and torn down with every job and process it started. Needs root (slurmd runs
// jobs as their owner). Facts it relies on: shared/notes/slurm-local.md.
#ifndef PARATUNE_TESTS_SLURM_CLUSTER_H_
#define PARATUNE_TESTS_SLURM_CLUSTER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tests/process_harness.h"
#include "tests/run_command.h"

namespace paratune {

// Thread-compatible. At most one per process: Start sets SLURM_CONF in the environment, so
// that the Slurm commands the test runs (and the jobs' srun) talk to this cluster.
class SlurmCluster {
 public:
  // Starts the daemons and waits until the node is idle (a few seconds). FAILED_PRECONDITION
  // when not root; NOT_FOUND when a program is missing (scripts/setup.sh installs them);
  // UNAVAILABLE or DEADLINE_EXCEEDED, with the daemons' log tails, when the cluster does
  // not come up.
  static absl::StatusOr<std::unique_ptr<SlurmCluster>> Start();

  SlurmCluster(const SlurmCluster&) = delete;
  SlurmCluster& operator=(const SlurmCluster&) = delete;
  // Cancels every job, waits for them to end, stops the daemons, kills and reaps anything
  // left that carries this cluster's SLURM_CONF, and removes the folder.
  ~SlurmCluster();

  // The cluster's folder (configuration, state, logs); job output may be written here.
  const std::string& dir() const { return dir_; }

  // Runs a Slurm command (sbatch, squeue, scontrol, scancel, sinfo) against this cluster.
  absl::StatusOr<CommandResult> Run(const std::vector<std::string>& argv);

  // sbatch --parsable `args`; the job id. The command's output when it fails.
  absl::StatusOr<int64_t> Submit(const std::vector<std::string>& args);

  // The job's JobState from `scontrol show job` (PENDING, RUNNING, COMPLETED, CANCELLED, ...).
  absl::StatusOr<std::string> JobState(int64_t job);

  // scancel, then waits (at most `timeout`) until the job has ended; returns its final state.
  absl::StatusOr<std::string> Cancel(int64_t job, absl::Duration timeout = absl::Seconds(60));

 private:
  SlurmCluster() = default;
  // Waits until `sinfo` reports the node idle.
  absl::Status WaitUntilIdle();
  // The last lines of the daemons' logs, for errors.
  std::string LogTails() const;
  // Kills and reaps every process whose environment holds this cluster's SLURM_CONF
  // (job steps are reparented to this process, a child subreaper, or to init).
  void KillLeftovers();

  std::string dir_;
  std::string conf_;
  std::unique_ptr<ChildProcess> munged_;
  std::unique_ptr<ChildProcess> slurmctld_;
  std::unique_ptr<ChildProcess> slurmd_;
};

}  // namespace paratune

#endif  // PARATUNE_TESTS_SLURM_CLUSTER_H_
