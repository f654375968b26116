// A probe backend turns a ProbeAssignment into a ProbeResult (DESIGN.md §8): sim, replay,
// command or cuda. Every backend passes the shared conformance suite
// (worker/backend_conformance.h).
#ifndef PARATUNE_WORKER_PROBE_BACKEND_H_
#define PARATUNE_WORKER_PROBE_BACKEND_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "proto/probe.pb.h"

namespace paratune {

// What a running probe may ask of the daemon running it. Thread-safe.
class ProbeContext {
 public:
  virtual ~ProbeContext() = default;

  // Notified when the probe must stop: its deadline passed, the server cancelled it, or the
  // daemon is stopping. Backends check it often, or wait on it, and then return CANCELLED.
  virtual const absl::Notification& cancelled() const = 0;

  // For probes whose ranks span several workers (assignment.gang_size() > 1): gang[0]'s
  // backend passes its rendezvous token (e.g. the NCCL unique id its rank 0 created), the
  // others pass "", and every caller gets gang[0]'s token once the scheduler has it.
  // CANCELLED when cancelled() is notified first; FAILED_PRECONDITION when the server no
  // longer leases the probe to this worker.
  virtual absl::StatusOr<std::string> Rendezvous(const std::string& token) = 0;
};

// Implementations must be thread-safe: Run may be called concurrently.
class ProbeBackend {
 public:
  virtual ~ProbeBackend() = default;

  // The name workers register and assignments ask for: "sim", "replay", "command", "cuda".
  virtual std::string Name() const = 0;

  // Whether two runs of the same assignment (same seed) give identical results.
  virtual bool Deterministic() const = 0;

  // Runs this worker's ranks of one probe (assignment.gang[assignment.gang_index]). A probe
  // that ran returns a ProbeResult whose outcome says how it ended (OK, OUT_OF_MEMORY,
  // TIMEOUT, CRASH, NOT_MEASURED). Errors: CANCELLED when context.cancelled() was notified
  // before the probe finished (the backend stops promptly); INVALID_ARGUMENT naming the field
  // when the assignment cannot be run (bad spec or configuration); UNAVAILABLE or INTERNAL
  // when the backend itself failed (the daemon reports PROBE_INFRA_ERROR or PROBE_CRASH).
  virtual absl::StatusOr<v1::ProbeResult> Run(const v1::ProbeAssignment& assignment,
                                              ProbeContext& context) = 0;
};

// Waits `duration`, the wall time a sim or replay probe takes so that a search's progress can
// be watched. CANCELLED naming `probe` when the context is cancelled first (or already was).
absl::Status WaitUnlessCancelled(const ProbeContext& context, absl::Duration duration,
                                 const std::string& probe);

// The context of a probe that runs on one worker with nobody to rendezvous with: tests, and
// tools that run a backend directly. Rendezvous hands back the caller's own token.
class SoloProbeContext : public ProbeContext {
 public:
  // Stops the probe.
  void Cancel() {
    if (!cancelled_.HasBeenNotified()) cancelled_.Notify();
  }
  const absl::Notification& cancelled() const override { return cancelled_; }
  // `token` itself; FAILED_PRECONDITION for "" (no gang[0] will ever send one).
  absl::StatusOr<std::string> Rendezvous(const std::string& token) override;

 private:
  absl::Notification cancelled_;
};

}  // namespace paratune

#endif  // PARATUNE_WORKER_PROBE_BACKEND_H_
