#include "worker/probe/test_assignments.h"

#include "absl/strings/str_cat.h"

namespace paratune {

v1::ProbeAssignment TestAssignment(const std::string& preset, int64_t global_batch, int64_t seq_len,
                                   int64_t dp, int64_t tp, int64_t pp, int64_t cp,
                                   int64_t micro_batch) {
  const int64_t world = dp * tp * pp * cp;
  v1::ProbeAssignment assignment;
  assignment.set_name("searches/1/candidates/0/probes/1");
  assignment.set_backend("cuda");
  assignment.mutable_model()->set_preset(preset);
  assignment.mutable_training()->set_global_batch_size(global_batch);
  assignment.mutable_training()->set_seq_len(seq_len);
  assignment.mutable_cluster()->mutable_gpu()->set_type("h100-80gb");
  assignment.mutable_cluster()->set_num_nodes(1);
  assignment.mutable_cluster()->set_gpus_per_node(world);
  v1::ParallelConfig& config = *assignment.mutable_config();
  config.set_data_parallel(dp);
  config.set_tensor_parallel(tp);
  config.set_pipeline_parallel(pp);
  config.set_context_parallel(cp);
  config.set_micro_batch_size(micro_batch);
  assignment.set_scope(v1::PROBE_SCOPE_FULL);
  assignment.set_warmup_steps(1);
  assignment.set_timed_steps(3);
  assignment.set_deadline_seconds(120);
  assignment.set_seed(7);
  assignment.set_num_ranks(world);
  v1::GangMember& member = *assignment.add_gang();
  member.set_worker("workers/1");
  member.set_hostname("localhost");
  member.set_first_rank(0);
  member.set_num_ranks(world);
  assignment.set_gang_index(0);
  for (int64_t gpu = 0; gpu < world; ++gpu) assignment.add_gpu_indices(gpu);
  return assignment;
}

v1::ProbeAssignment AsReplicaProbe(v1::ProbeAssignment assignment) {
  const v1::ParallelConfig& config = assignment.config();
  const int64_t ranks =
      config.tensor_parallel() * config.pipeline_parallel() * config.context_parallel();
  assignment.set_scope(v1::PROBE_SCOPE_REPLICA);
  assignment.set_num_ranks(ranks);
  assignment.clear_gang();
  v1::GangMember& member = *assignment.add_gang();
  member.set_worker("workers/1");
  member.set_hostname("localhost");
  member.set_num_ranks(ranks);
  assignment.set_gang_index(0);
  assignment.clear_gpu_indices();
  for (int64_t gpu = 0; gpu < ranks; ++gpu) assignment.add_gpu_indices(gpu);
  return assignment;
}

v1::ProbeAssignment AsGangMember(v1::ProbeAssignment assignment, int64_t members, int64_t index) {
  const int64_t share = assignment.num_ranks() / members;
  assignment.clear_gang();
  for (int64_t i = 0; i < members; ++i) {
    v1::GangMember& member = *assignment.add_gang();
    member.set_worker(absl::StrCat("workers/", i + 1));
    member.set_hostname(absl::StrCat("host", i + 1));
    member.set_first_rank(i * share);
    member.set_num_ranks(share);
  }
  assignment.set_gang_index(index);
  assignment.clear_gpu_indices();
  for (int64_t gpu = 0; gpu < share; ++gpu) assignment.add_gpu_indices(gpu);
  return assignment;
}

}  // namespace paratune
