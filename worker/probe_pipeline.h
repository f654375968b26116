// How the worker runs a probe, one way for every backend (DESIGN.md §8): from the assignment
// the scheduler sent to the ProbeResult the worker reports. The only place that holds a probe
// to its deadline.
#ifndef PARATUNE_WORKER_PROBE_PIPELINE_H_
#define PARATUNE_WORKER_PROBE_PIPELINE_H_

#include "absl/time/time.h"
#include "common/clock.h"
#include "proto/probe.pb.h"
#include "worker/probe_backend.h"

namespace paratune {

// The deadline of a probe whose assignment sets none.
inline constexpr absl::Duration kDefaultProbeDeadline = absl::Seconds(600);

// Runs `assignment` with `backend` and returns its result:
//   1. resolves its ProbeSpec (probe/probe_spec.h), once for every backend;
//   2. holds it to its deadline, assignment.deadline_seconds (kDefaultProbeDeadline when 0)
//      from this call on `clock`: the backend runs on a thread of its own and is told to stop
//      (context.Stop()) its StopGrace before the deadline, so that it is gone by then, and a
//      probe stopped there is PROBE_TIMEOUT with what the backend said of it; a deadline not
//      longer than the StopGrace leaves no time and is refused as an INVALID_ARGUMENT. An OK
//      run whose modelled wall time (sim, replay) exceeds the deadline is PROBE_TIMEOUT at the
//      deadline too, as the probe on real GPUs would have been stopped there;
//   3. makes the ProbeResult of the backend's run (BuildProbeResult), the wall time measured
//      on `clock` unless the run models it.
// An assignment the spec refuses, a backend error (CANCELLED too, when the caller stopped the
// probe through `context`) or an exception the backend throws becomes a failed result
// (probe_failure.h). Blocks until the backend returns: backends stop promptly when told (the
// conformance suite checks it). Thread-safe for distinct contexts.
v1::ProbeResult RunProbe(ProbeBackend& backend, const v1::ProbeAssignment& assignment,
                         ProbeContext& context, Clock& clock);

}  // namespace paratune

#endif  // PARATUNE_WORKER_PROBE_PIPELINE_H_
