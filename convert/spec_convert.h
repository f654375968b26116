// Turns paratune.v1 request messages into validated estimator values and back. Every error
// is a field error (estimator/field_error.h): INVALID_ARGUMENT naming the proto field and
// value, from the message converted down, with the field as data; an unknown model preset or
// GPU type included (it is bad input here, not a missing resource).
#ifndef PARATUNE_CONVERT_SPEC_CONVERT_H_
#define PARATUNE_CONVERT_SPEC_CONVERT_H_

#include "absl/status/statusor.h"
#include "estimator/cluster_spec.h"
#include "estimator/model_spec.h"
#include "estimator/parallel_config.h"
#include "estimator/planner.h"
#include "estimator/training_spec.h"
#include "proto/search.pb.h"
#include "proto/specs.pb.h"

namespace paratune {

// A preset, or explicit dimensions (then every dimension must be set and the preset empty;
// the mixture-of-experts fields only for a model with experts, moe_layer_step 0 as 1). A model
// with experts converts and is estimated; what does not run it yet refuses it (the native
// probe: CheckCudaProbeRuns, worker/probe/probe_spec.h).
absl::StatusOr<ModelSpec> ModelSpecFromProto(const v1::ModelSpec& proto);
// Unset switches take the defaults documented on paratune.v1.TrainingSpec.
absl::StatusOr<TrainingSpec> TrainingSpecFromProto(const v1::TrainingSpec& proto);
// The GPU's catalog values with every non-zero proto field overriding its counterpart.
absl::StatusOr<ClusterSpec> ClusterSpecFromProto(const v1::ClusterSpec& proto);
// `proto` as a mode, with UNSPECIFIED as `unset`; a field error naming `field` when it is no
// known mode.
absl::StatusOr<DataParallelSharding> DataParallelShardingFromProto(v1::DataParallelSharding proto,
                                                                   DataParallelSharding unset,
                                                                   absl::string_view field);
// The fields as given (virtual_pipeline 0 as 1, sequence_parallel unset as tp > 1, dp_sharding
// unset as the training's default), checked against no rule; INVALID_ARGUMENT only for an
// unknown recompute or sharding mode.
absl::StatusOr<ParallelDims> ParallelDimsFromProto(const v1::ParallelConfig& proto,
                                                   const TrainingSpec& training);
// ParallelConfig::Create's rules, and training.tp_comm_overlap's: sequence parallelism
// wherever tensor_parallel > 1.
absl::StatusOr<ParallelConfig> ParallelConfigFromProto(const v1::ParallelConfig& proto,
                                                       const ModelSpec& model,
                                                       const TrainingSpec& training,
                                                       const ClusterSpec& cluster,
                                                       const PlacementRules& rules);
// Search-space and memory options of a plan.
absl::StatusOr<PlanOptions> PlanOptionsFromProto(const v1::SearchSpace& proto);
// Whether a search of `space` probes RISKY configurations: unless its memory_policy is
// SAFE_ONLY (UNSPECIFIED is MEASURE_RISKY, the default).
bool ProbesRiskyConfigurations(const v1::SearchSpace& space);

v1::Recompute RecomputeToProto(Recompute recompute);
v1::DataParallelSharding DataParallelShardingToProto(DataParallelSharding sharding);
v1::ParallelConfig ParallelConfigToProto(const ParallelConfig& config);

// INVALID_ARGUMENT naming both fields when `cluster`'s GPUs cannot run `training`: fp8 needs
// fp8 tensor cores, which Ampere lacks (Transformer Engine runs fp8 only from compute
// capability 8.9; ArchitectureOf tells the GPU's architecture).
absl::Status CheckTrainingRunsOnGpu(const TrainingSpec& training, const ClusterSpec& cluster);

// The validated model, training run and cluster of one search spec (CheckTrainingRunsOnGpu
// included).
struct ResolvedSpec {
  ModelSpec model;
  TrainingSpec training;
  ClusterSpec cluster;
  PlanOptions plan_options;
};
absl::StatusOr<ResolvedSpec> ResolveSearchSpec(const v1::SearchSpec& proto);

// One chosen configuration with what it trains, on what: the whole configuration (all dp
// ranks), whatever part of it a probe runs.
struct ResolvedConfiguration {
  ModelSpec model;
  TrainingSpec training;
  ClusterSpec cluster;
  ParallelConfig config;
};
// The fields validated (CheckTrainingRunsOnGpu included), the configuration under the
// loosest placement rules (tp x cp across
// nodes, uneven pipeline splits): the scheduler chose it under its search's own rules, so
// whoever runs or exports it checks only that it is well-formed (dp x tp x pp x cp = the
// cluster's GPUs, divisibility). INVALID_ARGUMENT naming the field otherwise.
absl::StatusOr<ResolvedConfiguration> ResolveConfiguration(const v1::ModelSpec& model,
                                                           const v1::TrainingSpec& training,
                                                           const v1::ClusterSpec& cluster,
                                                           const v1::ParallelConfig& config);

}  // namespace paratune

#endif  // PARATUNE_CONVERT_SPEC_CONVERT_H_
