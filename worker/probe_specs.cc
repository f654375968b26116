#include "worker/probe_specs.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "convert/spec_convert.h"

namespace paratune {
namespace {

constexpr int64_t kMaxTimedSteps = 10'000;

}  // namespace

absl::StatusOr<ProbeSpecs> ResolveProbeSpecs(const v1::ProbeAssignment& assignment) {
  PT_ASSIGN_OR_RETURN(ModelSpec model, ModelSpecFromProto(assignment.model()));
  PT_ASSIGN_OR_RETURN(TrainingSpec training, TrainingSpecFromProto(assignment.training()));
  PT_ASSIGN_OR_RETURN(ClusterSpec cluster, ClusterSpecFromProto(assignment.cluster()));
  PlacementRules rules;
  rules.allow_tp_cp_across_nodes = true;
  rules.allow_uneven_pipeline = true;
  PT_ASSIGN_OR_RETURN(ParallelConfig config, ParallelConfigFromProto(assignment.config(), model,
                                                                     training, cluster, rules));
  if (assignment.timed_steps() < 1 || assignment.timed_steps() > kMaxTimedSteps) {
    return absl::InvalidArgumentError(absl::StrCat("assignment.timed_steps (",
                                                   assignment.timed_steps(), ") must be in [1, ",
                                                   kMaxTimedSteps, "]"));
  }
  return ProbeSpecs{std::move(model), std::move(training), std::move(cluster), std::move(config)};
}

int64_t ConfigurationGpus(const ParallelConfig& config) {
  return config.dp() * config.tp() * config.pp() * config.cp();
}

}  // namespace paratune
