// A probe result with every field set, for the tests of what the server accepts from workers.
#ifndef PARATUNE_SERVER_CORE_TEST_PROBE_RESULT_H_
#define PARATUNE_SERVER_CORE_TEST_PROBE_RESULT_H_

#include "proto/probe.pb.h"

namespace paratune {

// An OK result as a cuda probe of short steps reports it: 2 timed full steps extrapolated
// from 2 series of 8 and 16 micro-batches (of 32), measurements with one phase, collective
// and memory term, and one ran_on host. ValidateProbeResult accepts it.
v1::ProbeResult CompleteProbeResult();

}  // namespace paratune

#endif  // PARATUNE_SERVER_CORE_TEST_PROBE_RESULT_H_
