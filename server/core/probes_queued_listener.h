// Told when probes were queued (or gang shares left for other workers), so that whoever
// dispatches them looks again: the parked AcquireProbe calls (server/core/probe_wait_list.h) and
// the launcher that starts workers for probes (server/slurm/slurm_launcher.h).
#ifndef PARATUNE_SERVER_CORE_PROBES_QUEUED_LISTENER_H_
#define PARATUNE_SERVER_CORE_PROBES_QUEUED_LISTENER_H_

namespace paratune {

class ProbesQueuedListener {
 public:
  virtual ~ProbesQueuedListener() = default;
  // Called without the scheduler's lock, from any thread. Must return quickly (wake a
  // thread, set a flag) and may call back into the scheduler only from another thread.
  virtual void OnProbesQueued() = 0;
};

}  // namespace paratune

#endif  // PARATUNE_SERVER_CORE_PROBES_QUEUED_LISTENER_H_
