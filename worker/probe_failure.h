// How a backend's error becomes a ProbeResult the scheduler can act on.
#ifndef PARATUNE_WORKER_PROBE_FAILURE_H_
#define PARATUNE_WORKER_PROBE_FAILURE_H_

#include <string>

#include "absl/status/status.h"
#include "proto/probe.pb.h"

namespace paratune {

// A result for a probe whose backend returned `error` (not OK): PROBE_INFRA_ERROR (the
// scheduler retries elsewhere) for UNAVAILABLE, RESOURCE_EXHAUSTED, ABORTED,
// DEADLINE_EXCEEDED and CANCELLED; PROBE_CRASH for everything else, an assignment the
// backend rejected included. The message names the backend and carries the error.
v1::ProbeResult ResultFromBackendError(const std::string& backend, const absl::Status& error);

}  // namespace paratune

#endif  // PARATUNE_WORKER_PROBE_FAILURE_H_
