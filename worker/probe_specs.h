// The validated estimator values of a ProbeAssignment, shared by the backends that need them.
#ifndef PARATUNE_WORKER_PROBE_SPECS_H_
#define PARATUNE_WORKER_PROBE_SPECS_H_

#include "absl/status/statusor.h"
#include "estimator/cluster_spec.h"
#include "estimator/model_spec.h"
#include "estimator/parallel_config.h"
#include "estimator/training_spec.h"
#include "proto/probe.pb.h"

namespace paratune {

// What a probe trains, on what, and how it is split. The configuration is the whole one the
// candidate names (all dp ranks), whatever the probe's scope.
struct ProbeSpecs {
  ModelSpec model;
  TrainingSpec training;
  ClusterSpec cluster;
  ParallelConfig config;
};

// The assignment's model, training run, cluster and configuration, and a check that
// timed_steps is in [1, 10000]. The configuration needs only to be well-formed
// (dp x tp x pp x cp = the cluster's GPUs, divisibility): the scheduler chose it under its own
// placement rules. INVALID_ARGUMENT naming the field otherwise.
absl::StatusOr<ProbeSpecs> ResolveProbeSpecs(const v1::ProbeAssignment& assignment);

// Total GPUs of the configuration (dp x tp x pp x cp).
int64_t ConfigurationGpus(const ParallelConfig& config);

}  // namespace paratune

#endif  // PARATUNE_WORKER_PROBE_SPECS_H_
