// Where a probe result's numbers come from, for the views that must not pass a model or a
// published table off as a measurement (metrics labels, reports).
#ifndef PARATUNE_CONVERT_RESULT_SOURCE_H_
#define PARATUNE_CONVERT_RESULT_SOURCE_H_

#include "proto/probe.pb.h"

namespace paratune {

// "simulated" (the sim backend's model), "replayed" (a published measurement the replay
// backend looked up), "extrapolated" (full steps fitted from short steps measured on GPUs;
// docs/short_probes.md) or "measured" (full steps timed on GPUs). A simulated short probe is
// "simulated": no GPU ran it. Empty for a probe given up (PROBE_INFRA_ERROR): it has no
// figures, so nothing was measured.
const char* ResultSource(const v1::ProbeResult& result);

}  // namespace paratune

#endif  // PARATUNE_CONVERT_RESULT_SOURCE_H_
