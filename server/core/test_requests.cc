#include "server/core/test_requests.h"

namespace paratune {

v1::CreateSearchRequest SmallSimSearch(int64_t top_k, int64_t nodes, int64_t gpus_per_node) {
  v1::CreateSearchRequest request;
  request.set_display_name("small sim search");
  v1::SearchSpec& spec = *request.mutable_spec();
  spec.mutable_model()->set_preset("llama3.2-1b");
  spec.mutable_training()->set_global_batch_size(64);
  spec.mutable_training()->set_seq_len(2048);
  spec.mutable_cluster()->mutable_gpu()->set_type("h100-80gb");
  spec.mutable_cluster()->set_num_nodes(nodes);
  spec.mutable_cluster()->set_gpus_per_node(gpus_per_node);
  spec.set_policy(v1::TOP_K);
  spec.set_top_k(top_k);
  spec.mutable_probe()->set_backend("sim");
  return request;
}

v1::RegisterWorkerRequest Worker(int gpus, const std::string& backend) {
  v1::RegisterWorkerRequest request;
  request.set_hostname("node");
  for (int i = 0; i < gpus; ++i) {
    v1::Gpu& gpu = *request.add_gpus();
    gpu.set_index(i);
    gpu.set_name("simulated H100-80GB");
    gpu.set_memory_bytes(85'520'809'984);
  }
  request.add_backends(backend);
  return request;
}

}  // namespace paratune
