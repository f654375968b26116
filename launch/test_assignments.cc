#include "launch/test_assignments.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "convert/spec_convert.h"

namespace paratune {

v1::ProbeAssignment TwoNodeGangAssignment(v1::Recompute recompute) {
  v1::ProbeAssignment assignment;
  assignment.set_name("searches/3/candidates/5/probes/1");
  assignment.set_backend("command");
  assignment.mutable_model()->set_preset("llama3.1-70b");
  assignment.mutable_training()->set_global_batch_size(64);
  assignment.mutable_training()->set_seq_len(8192);
  assignment.mutable_cluster()->mutable_gpu()->set_type("h100-80gb");
  assignment.mutable_cluster()->set_num_nodes(2);
  assignment.mutable_cluster()->set_gpus_per_node(8);
  v1::ParallelConfig& config = *assignment.mutable_config();
  config.set_data_parallel(2);
  config.set_tensor_parallel(4);
  config.set_pipeline_parallel(2);
  config.set_context_parallel(1);
  config.set_micro_batch_size(1);
  config.set_virtual_pipeline(2);
  config.set_recompute(recompute);
  assignment.set_scope(v1::PROBE_SCOPE_FULL);
  assignment.set_warmup_steps(2);
  assignment.set_timed_steps(5);
  assignment.set_deadline_seconds(600);
  assignment.set_num_ranks(16);
  for (int i = 0; i < 2; ++i) {
    v1::GangMember& member = *assignment.add_gang();
    member.set_worker(absl::StrCat("workers/", i + 1));
    member.set_hostname(absl::StrCat("gpu-node-", i));
    member.set_first_rank(8 * i);
    member.set_num_ranks(8);
  }
  assignment.set_gang_index(1);
  for (int g = 0; g < 8; ++g) assignment.add_gpu_indices(g);
  return assignment;
}

absl::StatusOr<LaunchValues> ProbeLaunchValues(const v1::ProbeAssignment& assignment,
                                               int64_t micro_batches_per_step,
                                               int64_t extra_warmup_iterations, int master_port) {
  PT_ASSIGN_OR_RETURN(const ResolvedConfiguration specs,
                      ResolveConfiguration(assignment.model(), assignment.training(),
                                           assignment.cluster(), assignment.config()));
  return LaunchValues::ForProbe(assignment, specs.model, specs.training, specs.config,
                                micro_batches_per_step > 0
                                    ? micro_batches_per_step
                                    : specs.config.NumMicroBatches(specs.training),
                                extra_warmup_iterations, master_port);
}

absl::StatusOr<LaunchValues> ExportLaunchValues(const v1::ProbeAssignment& assignment) {
  PT_ASSIGN_OR_RETURN(const ResolvedConfiguration specs,
                      ResolveConfiguration(assignment.model(), assignment.training(),
                                           assignment.cluster(), assignment.config()));
  return LaunchValues::ForExport(specs.model, specs.training, specs.cluster, specs.config);
}

TrainingOptions PresetExportTraining() {
  TrainingOptions options;
  options.global_batch_size = kPresetExportGlobalBatch;
  options.seq_len = kPresetExportSeqLen;
  return options;
}

absl::StatusOr<LaunchValues> PresetExportLaunchValues(absl::string_view preset, int64_t nodes,
                                                      const ParallelDims& dims,
                                                      const TrainingOptions& options) {
  PT_ASSIGN_OR_RETURN(const ModelSpec model, FindModelPreset(preset));
  PT_ASSIGN_OR_RETURN(const TrainingSpec training, TrainingSpec::Create(options));
  PT_ASSIGN_OR_RETURN(const GpuSpec gpu, FindGpuPreset("h100-80gb"));
  PT_ASSIGN_OR_RETURN(const ClusterSpec cluster,
                      ClusterSpec::Create(gpu, nodes, kPresetExportGpusPerNode));
  PlacementRules rules;
  rules.allow_uneven_pipeline = true;
  PT_ASSIGN_OR_RETURN(const ParallelConfig config,
                      ParallelConfig::Create(model, training, cluster, rules, dims));
  return LaunchValues::ForExport(model, training, cluster, config);
}

}  // namespace paratune
