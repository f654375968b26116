// How a probe that gave no run becomes a ProbeResult the scheduler can act on: a backend's
// error, a probe stopped at its deadline, a result the server refused.
#ifndef PARATUNE_WORKER_PROBE_FAILURE_H_
#define PARATUNE_WORKER_PROBE_FAILURE_H_

#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "proto/probe.pb.h"

namespace paratune {

// A result for a probe whose backend returned `error` (not OK): PROBE_INFRA_ERROR (the
// scheduler retries elsewhere) for UNAVAILABLE, RESOURCE_EXHAUSTED, ABORTED,
// DEADLINE_EXCEEDED and CANCELLED; PROBE_CRASH for everything else, an assignment the
// backend rejected included. The message names the backend and carries the error.
v1::ProbeResult ResultFromBackendError(const std::string& backend, const absl::Status& error);

// A PROBE_TIMEOUT of `backend`'s probe, which the worker told to stop `grace` before its
// deadline of `deadline_seconds` because it had not finished; `stopped` is what the backend
// returned then (its CANCELLED message says what the probe had done), quoted when not OK.
v1::ProbeResult ResultAtDeadline(const std::string& backend, double deadline_seconds,
                                 absl::Duration grace, const absl::Status& stopped);

// What the worker reports instead of a result of `backend` that the server refused as out of
// range (`refusal`, INVALID_ARGUMENT): a PROBE_CRASH quoting the refusal, which the server
// takes, so the probe's lease ends at once with its attempt counted rather than at its
// deadline. Of the refused figures only `wall_seconds`, measured by the worker, is kept.
v1::ProbeResult ResultRefusedByServer(const std::string& backend, const absl::Status& refusal,
                                      double wall_seconds);

}  // namespace paratune

#endif  // PARATUNE_WORKER_PROBE_FAILURE_H_
