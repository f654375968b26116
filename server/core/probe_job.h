// How one probe becomes one Slurm job (DESIGN.md §10, server/slurm/slurm_launcher.h): the job's
// name, which names the probe, so that Slurm's own job list is all the launcher needs to
// remember across restarts; and its sbatch arguments: as many nodes as the probe's ranks
// need, and on each node one paratune-worker started by srun, reserved for the probe
// (kProbeReservationLabel) and exiting after it, so that the job ends with its probe.
#ifndef PARATUNE_SERVER_CORE_PROBE_JOB_H_
#define PARATUNE_SERVER_CORE_PROBE_JOB_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "server/core/launch_target.h"
#include "server/core/resource_names.h"

namespace paratune {

struct ProbeJobOptions {
  // Jobs are named "<prefix>-s<search>-c<candidate>-a<attempt>". A server follows, and
  // cancels when it no longer needs them, the jobs of its prefix that its user has: give
  // each server that shares a Slurm cluster and a user its own prefix. Letters, digits, '_',
  // '.' and '-'; 1 .. 64 bytes.
  std::string job_name_prefix = "paratune";
  // sbatch --partition and --account; empty leaves Slurm's default.
  std::string partition;
  std::string account;
  // Ask for the search's GPUs per node (--gpus-per-node). Off for clusters without GPU GRES,
  // e.g. sim probes on CPU nodes.
  bool request_gpus = true;
  // Whole nodes (--exclusive): no other job shares the nodes a probe measures.
  bool exclusive = true;
  // sbatch --output pattern (%j is the job id), where the workers' logs go; empty leaves
  // Slurm's default, slurm-%j.out in the server's working directory.
  std::string output;
  // Added to the probe's deadline for the job's --time: the time its workers need to start
  // and register. The launcher also cancels a running job whose workers have not taken the
  // probe within it.
  absl::Duration startup_allowance = absl::Minutes(5);
  // More sbatch arguments, e.g. --qos=short or --constraint=h100.
  std::vector<std::string> extra_sbatch_args;
  // host:port of this server as the job's nodes reach it; required by SlurmLauncher::Start.
  std::string server_address;
  // The paratune-worker executable on the nodes (a path, or a name in their PATH) and more
  // flags for it, e.g. --sim_gpus=8 or a command backend's config. --server, --backend,
  // --labels and --exit_after_probes are the launcher's.
  std::string worker_binary = "paratune-worker";
  std::vector<std::string> worker_args;
  // Flags (names without dashes) that worker_args must set: the credentials the workers need
  // to reach a server with TLS, client certificates or tokens (WorkerCredentialFlags in
  // server/security/server_security.h), given as file paths, so that no secret is on a command
  // line.
  std::vector<std::string> required_worker_flags;
};

// INVALID_ARGUMENT naming the option and its value, or the required worker flag that
// worker_args lack; server_address is not checked (a server fills it in once it listens).
absl::Status ValidateProbeJobOptions(const ProbeJobOptions& options);

// "<prefix>-s<search>-c<candidate>-a<attempt>".
std::string ProbeJobName(absl::string_view prefix, const ProbeId& probe);

// The probe a job of this prefix was submitted for; nullopt for other names.
std::optional<ProbeId> ProbeOfJobName(absl::string_view prefix, absl::string_view job_name);

// The Slurm job of one probe.
struct ProbeJob {
  // ProbeJobName of the probe.
  std::string name;
  // Each node holds as many whole tensor x context parallel groups as its gpus_per_node
  // GPUs fit.
  int64_t nodes = 0;
  // sbatch's arguments (without --parsable), the job's script included.
  std::vector<std::string> sbatch_args;
};

// The job for `probe`. FAILED_PRECONDITION when a tensor x context parallel group is larger
// than a node; INVALID_ARGUMENT for a malformed probe name.
absl::StatusOr<ProbeJob> MakeProbeJob(const ProbeJobOptions& options, const PendingProbe& probe);

}  // namespace paratune

#endif  // PARATUNE_SERVER_CORE_PROBE_JOB_H_
