// Validation of what workers send (proto/worker_service.proto): each WorkerService request's
// fields that need no server state. The worker field is checked where the scheduler looks
// the worker up (ParseWorkerName), as is the probe of ReportProbe and Rendezvous
// (ParseProbeName); a report's result (ValidateProbeResult) is read only once the probe is
// known to be leased to the worker, and so is who sent a rendezvous token (lease.h).
#ifndef PARATUNE_SERVER_CORE_WORKER_REQUEST_H_
#define PARATUNE_SERVER_CORE_WORKER_REQUEST_H_

#include "absl/status/status.h"
#include "proto/probe.pb.h"
#include "proto/worker_service.pb.h"

namespace paratune {

// INVALID_ARGUMENT naming the field: hostname 1..256 bytes; 1..64 GPUs of one type (the same
// name and memory) with memory in [1, 16 TiB], distinct indices in [0, 63] and names up to 256
// bytes; 1..4 distinct backends among sim, replay, command, cuda; at most 32 labels with keys
// of 1..256 bytes and values up to 256 bytes.
absl::Status ValidateRegisterWorkerRequest(const v1::RegisterWorkerRequest& request);

// INVALID_ARGUMENT naming the field and its value: running_probes of more than 64 entries
// (a worker runs at most one probe per GPU) or one that is not a probe name
// (searches/{id}/candidates/{n}/probes/{attempt}, which bounds its length).
absl::Status ValidateHeartbeatRequest(const v1::HeartbeatRequest& request);

// INVALID_ARGUMENT naming the field and its value: wait_seconds outside [0, 60] (NaN
// included), or a last_probe that is neither empty nor a probe name.
absl::Status ValidateAcquireProbeRequest(const v1::AcquireProbeRequest& request);

// INVALID_ARGUMENT naming the field: a token over 4,096 bytes.
absl::Status ValidateRendezvousRequest(const v1::RendezvousRequest& request);

// INVALID_ARGUMENT naming the field: a reason over 1,024 bytes.
absl::Status ValidateDeregisterWorkerRequest(const v1::DeregisterWorkerRequest& request);

// INVALID_ARGUMENT naming the field and its value, whatever the outcome, for a figure out of
// its range (proto/probe.proto): an unset or unknown outcome; a time outside [0, 10^6] s (step
// times and the extrapolation's slot outside (0, 10^6], its fixed costs outside
// [-10^6, 10^6]); bytes outside [0, 16 TiB]; a rate beyond any machine's; a name of a part,
// phase, collective or memory term that is empty, any name over 256 bytes, a message over
// 64 KiB; more than 10,000 step times or 64 entries of any other list; simulated set by a
// backend other than sim. An OK result must also agree with itself: simulated exactly when
// its backend is sim; 1..10,000 step times with a positive mean within 1% of their mean and
// positive TFLOP/s and, when it has short steps, two or more series of ascending micro-batch
// counts below the extrapolated full step's, each with as many steps as step_times_seconds,
// and the extrapolation. A gang
// member's OK result may have no step times: its node ran its ranks without timing them (the
// gang's timing comes from the member that did, gang_result.h). ran_on is not checked: the
// server sets it.
absl::Status ValidateProbeResult(const v1::ProbeResult& result, bool gang_member = false);

}  // namespace paratune

#endif  // PARATUNE_SERVER_CORE_WORKER_REQUEST_H_
