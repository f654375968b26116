// Validation of what workers send: their registration and their probe results.
#ifndef PARATUNE_SERVER_WORKER_REQUEST_H_
#define PARATUNE_SERVER_WORKER_REQUEST_H_

#include "absl/status/status.h"
#include "proto/probe.pb.h"
#include "proto/worker_service.pb.h"

namespace paratune {

// INVALID_ARGUMENT naming the field: hostname 1..256 bytes; 1..64 GPUs of one type (the same
// name and memory) with positive memory and names up to 256 bytes; 1..4 distinct backends among
// sim, replay, command, cuda; at most 32 labels with keys and values up to 256 bytes.
absl::Status ValidateRegisterWorkerRequest(const v1::RegisterWorkerRequest& request);

// INVALID_ARGUMENT naming the field: an outcome must be set; an OK result has 1..10,000
// positive finite step times and finite, non-negative rates; message at most 64 KiB. A gang
// member's OK result may have no step times: its node ran its ranks without timing them (the
// gang's timing comes from the member that did, gang_result.h).
absl::Status ValidateProbeResult(const v1::ProbeResult& result, bool gang_member = false);

}  // namespace paratune

#endif  // PARATUNE_SERVER_WORKER_REQUEST_H_
