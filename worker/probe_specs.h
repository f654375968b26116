// The validated estimator values of a ProbeAssignment, shared by the backends that need them.
#ifndef PARATUNE_WORKER_PROBE_SPECS_H_
#define PARATUNE_WORKER_PROBE_SPECS_H_

#include "absl/status/statusor.h"
#include "convert/spec_convert.h"
#include "estimator/parallel_config.h"
#include "proto/probe.pb.h"

namespace paratune {

// What a probe trains, on what, and how it is split (convert/spec_convert.h).
using ProbeSpecs = ResolvedConfiguration;

// The assignment's model, training run, cluster and configuration (ResolveConfiguration), and
// a check that timed_steps is in [1, 10000]. INVALID_ARGUMENT naming the field otherwise.
absl::StatusOr<ProbeSpecs> ResolveProbeSpecs(const v1::ProbeAssignment& assignment);

// Total GPUs of the configuration (dp x tp x pp x cp).
int64_t ConfigurationGpus(const ParallelConfig& config);

}  // namespace paratune

#endif  // PARATUNE_WORKER_PROBE_SPECS_H_
