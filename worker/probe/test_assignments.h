// Probe assignments for the tests of the probe's host-side libraries and the cuda backend.
#ifndef PARATUNE_WORKER_PROBE_TEST_ASSIGNMENTS_H_
#define PARATUNE_WORKER_PROBE_TEST_ASSIGNMENTS_H_

#include <cstdint>
#include <string>

#include "proto/probe.pb.h"

namespace paratune {

// A FULL probe of `preset` on one node of `gpus` H100-80GB GPUs, global batch
// `global_batch`, sequence `seq_len`, the configuration given, run by a single worker on
// GPUs 0 .. world - 1, 1 warm-up and 3 timed steps.
v1::ProbeAssignment TestAssignment(const std::string& preset, int64_t global_batch, int64_t seq_len,
                                   int64_t dp, int64_t tp, int64_t pp, int64_t cp,
                                   int64_t micro_batch);

// `assignment` as a REPLICA probe: one data-parallel replica (tensor x pipeline x context
// ranks) on one worker, GPUs 0 .. ranks - 1.
v1::ProbeAssignment AsReplicaProbe(v1::ProbeAssignment assignment);

// Splits `assignment`'s ranks evenly over `members` workers and makes it the assignment of
// member `index` (gpu_indices 0 .. share - 1).
v1::ProbeAssignment AsGangMember(v1::ProbeAssignment assignment, int64_t members, int64_t index);

}  // namespace paratune

#endif  // PARATUNE_WORKER_PROBE_TEST_ASSIGNMENTS_H_
