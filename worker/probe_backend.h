// A probe backend runs a probe of a validated ProbeSpec and returns what it measured,
// replayed or simulated as a ProbeRun (DESIGN.md §8): sim, replay, command or cuda. The worker
// runs every backend the same way (probe_pipeline.h): it resolves the spec, enforces the
// deadline and makes the ProbeResult (probe_result_builder.h). Every backend passes the shared
// conformance suite (worker/backend_conformance.h).
#ifndef PARATUNE_WORKER_PROBE_BACKEND_H_
#define PARATUNE_WORKER_PROBE_BACKEND_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "worker/probe/probe_spec.h"
#include "worker/probe_run.h"

namespace paratune {

// What a running probe may ask of the worker running it. Thread-safe.
class ProbeContext {
 public:
  virtual ~ProbeContext() = default;

  // Notified when the backend must stop the probe: the worker tells it at the probe's deadline
  // (less the backend's StopGrace), when the server takes the probe back, or when the worker
  // stops. Backends check it often, or wait on it, and then return CANCELLED.
  const absl::Notification& stop() const { return stop_; }
  // Notifies stop(); later calls do nothing.
  void Stop();

  // For probes whose ranks span several workers (assignment.gang_size() > 1): gang[0]'s
  // backend passes its rendezvous token (e.g. the NCCL unique id its rank 0 created), the
  // others pass "", and every caller gets gang[0]'s token once the scheduler has it.
  // CANCELLED when stop() is notified first; FAILED_PRECONDITION when the server no longer
  // leases the probe to this worker.
  virtual absl::StatusOr<std::string> Rendezvous(const std::string& token) = 0;

 private:
  // Serializes Stop: a notification may be notified only once.
  absl::Mutex mu_;
  absl::Notification stop_;
};

// Implementations must be thread-safe: Run may be called concurrently.
class ProbeBackend {
 public:
  virtual ~ProbeBackend() = default;

  // The name workers register and assignments ask for: "sim", "replay", "command", "cuda".
  virtual std::string Name() const = 0;

  // Whether two runs of the same assignment (same seed) give identical runs.
  virtual bool Deterministic() const = 0;

  // How long before the probe's deadline the worker tells this backend to stop `spec`'s probe,
  // so that it is gone by the deadline: the time the backend takes to end its work once told
  // (a process's SIGTERM to SIGKILL). Zero for backends that stop at once.
  virtual absl::Duration StopGrace(const ProbeSpec& spec) const { return absl::ZeroDuration(); }

  // Runs this worker's ranks of one probe (spec.assignment().gang[gang_index]) and returns
  // what they gave: its outcome (OK, OUT_OF_MEMORY, TIMEOUT, CRASH, INFRA_ERROR,
  // NOT_MEASURED) and figures (probe_run.h). Errors: CANCELLED when context.stop() was
  // notified before the probe finished (the backend stops promptly), its message saying what
  // the probe had done by then; INVALID_ARGUMENT naming the field when this backend cannot run
  // the probe; UNAVAILABLE or INTERNAL when the backend itself failed (the worker reports
  // PROBE_INFRA_ERROR or PROBE_CRASH, probe_failure.h).
  virtual absl::StatusOr<ProbeRun> Run(const ProbeSpec& spec, ProbeContext& context) = 0;
};

// Waits `duration`, the wall time a sim or replay probe takes so that a search's progress can
// be watched. CANCELLED naming the probe when the context is told to stop first (or already
// was).
absl::Status WaitUnlessStopped(const ProbeContext& context, absl::Duration duration,
                               const ProbeSpec& spec);

// The context of a probe that runs on one worker with nobody to rendezvous with: tests, and
// tools that run a backend directly. Rendezvous hands back the caller's own token.
class SoloProbeContext : public ProbeContext {
 public:
  // `token` itself; FAILED_PRECONDITION for "" (no gang[0] will ever send one).
  absl::StatusOr<std::string> Rendezvous(const std::string& token) override;
};

}  // namespace paratune

#endif  // PARATUNE_WORKER_PROBE_BACKEND_H_
