// Probe results for tests: one with every field set, for the tests of what the server accepts
// from workers, and timed steps as a policy reads them.
#ifndef PARATUNE_SERVER_CORE_TEST_PROBE_RESULT_H_
#define PARATUNE_SERVER_CORE_TEST_PROBE_RESULT_H_

#include <cstdint>

#include "proto/probe.pb.h"

namespace paratune {

// An OK result as a cuda probe of short steps reports it: 2 timed full steps extrapolated
// from 2 series of 8 and 16 micro-batches (of 32), measurements with one phase, collective
// and memory term, and one ran_on host. ValidateProbeResult accepts it.
v1::ProbeResult CompleteProbeResult();

// An OK result of `steps` timed steps around `step_seconds`, alternately `relative_spread`
// above and below it (their mean), at `tflops` per GPU.
v1::ProbeResult TimedResult(double tflops, double step_seconds, int64_t steps,
                            double relative_spread = 0);

}  // namespace paratune

#endif  // PARATUNE_SERVER_CORE_TEST_PROBE_RESULT_H_
