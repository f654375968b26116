// A probe backend turns a ProbeAssignment into a ProbeResult (DESIGN.md §8): sim, replay,
// command or cuda. Every backend passes the shared conformance suite
// (worker/backend_conformance.h).
#ifndef PARATUNE_WORKER_PROBE_BACKEND_H_
#define PARATUNE_WORKER_PROBE_BACKEND_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "proto/probe.pb.h"

namespace paratune {

// Implementations must be thread-safe: Run may be called concurrently.
class ProbeBackend {
 public:
  virtual ~ProbeBackend() = default;

  // The name workers register and assignments ask for: "sim", "replay", "command", "cuda".
  virtual std::string Name() const = 0;

  // Whether two runs of the same assignment (same seed) give identical results.
  virtual bool Deterministic() const = 0;

  // Runs one probe. A probe that ran returns a ProbeResult whose outcome says how it ended
  // (OK, OUT_OF_MEMORY, TIMEOUT, CRASH, NOT_MEASURED). Errors: CANCELLED when `cancel` was
  // notified before the probe finished (the backend stops promptly); INVALID_ARGUMENT
  // naming the field when the assignment cannot be run (bad spec or configuration);
  // UNAVAILABLE or INTERNAL when the backend itself failed (the daemon reports
  // PROBE_INFRA_ERROR or PROBE_CRASH).
  virtual absl::StatusOr<v1::ProbeResult> Run(const v1::ProbeAssignment& assignment,
                                              const absl::Notification& cancel) = 0;
};

}  // namespace paratune

#endif  // PARATUNE_WORKER_PROBE_BACKEND_H_
