// What a component that starts workers for probes (server/slurm/slurm_launcher.h) needs of the
// scheduler: the probes waiting or running, and a way to say how a launch ended. The
// scheduler's Fleet (scheduler.h) implements it; a launcher's tests use a fake.
#ifndef PARATUNE_SERVER_CORE_LAUNCH_TARGET_H_
#define PARATUNE_SERVER_CORE_LAUNCH_TARGET_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace paratune {

// A worker registered with this label (e.g. by a Slurm job started for one probe) is reserved
// for the probe the label's value names (searches/{id}/candidates/{n}/probes/{attempt}): it
// is offered that probe only, and while such workers are live the probe is placed on them
// only.
inline constexpr char kProbeReservationLabel[] = "paratune.probe";

// A probe waiting for workers or running.
struct PendingProbe {
  // searches/{id}/candidates/{n}/probes/{attempt}: the lease it runs as, or, while queued,
  // the lease it will run as; workers reserved for it carry this kProbeReservationLabel.
  std::string probe;
  // Leased rather than queued.
  bool running = false;
  // Running, and at least one of its lease's workers is reserved for it.
  bool on_reserved_workers = false;
  // Queued, and no set of live workers could host it (Candidate.waiting_reason is set).
  bool unplaceable = false;
  std::string backend;
  std::string command_template;
  // Ranks it needs now, in tensor x context parallel groups of group_size that must share
  // a host; the search's cluster has gpus_per_node GPUs per host.
  int64_t ranks = 0;
  int64_t group_size = 0;
  int64_t gpus_per_node = 0;
  // Its wall-clock limit on the workers.
  absl::Duration deadline;
};

// Thread-safe.
class LaunchTarget {
 public:
  virtual ~LaunchTarget() = default;

  // Every queued and running probe: searches oldest first, candidates in selection order.
  virtual std::vector<PendingProbe> PendingProbes() = 0;

  // What was launched for `probe` (PendingProbe::probe) has ended, with `reason` naming it
  // and how it ended. The live workers reserved for the probe are gone (a probe they ran is
  // re-queued or failed); a probe still queued for that attempt, which its launch never
  // started, has the attempt counted: re-queued while attempts remain, else recorded as
  // PROBE_INFRA_ERROR. Nothing happens for a probe of an ended search or one that moved on.
  // INVALID_ARGUMENT for a malformed probe name; the store's error when the changes cannot
  // be stored.
  virtual absl::Status LaunchEnded(absl::string_view probe, const std::string& reason) = 0;

  // The launch for `probe` was refused before anything started (e.g. sbatch rejected the
  // job), with `reason` the refusal. Counts the attempt as LaunchEnded does; when the
  // search's last ProbeSettings.max_launch_failures refusals all said the same, the search
  // stops FAILED with that message in its stop reason. Errors as LaunchEnded.
  virtual absl::Status LaunchRefused(absl::string_view probe, const std::string& reason) = 0;
};

}  // namespace paratune

#endif  // PARATUNE_SERVER_CORE_LAUNCH_TARGET_H_
