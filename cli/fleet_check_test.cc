#include "cli/fleet_check.h"

#include "gtest/gtest.h"

namespace paratune {
namespace {

v1::Worker Worker(int gpus, const std::string& type, const std::string& backend) {
  v1::Worker worker;
  worker.set_state(v1::WORKER_IDLE);
  worker.set_gpu_type(type);
  worker.add_backends(backend);
  for (int i = 0; i < gpus; ++i) worker.add_gpus()->set_index(i);
  return worker;
}

v1::SearchSpec Spec() {
  v1::SearchSpec spec;
  spec.mutable_cluster()->mutable_gpu()->set_type("H100-80GB");
  spec.mutable_cluster()->set_num_nodes(2);
  spec.mutable_cluster()->set_gpus_per_node(8);
  return spec;
}

TEST(NoWorkerCanHostTest, ALiveWorkerOfTheTypeBackendAndNodeSizeCanHost) {
  v1::ListWorkersResponse workers;
  *workers.add_workers() = Worker(8, "h100-80gb", "sim");
  EXPECT_EQ(NoWorkerCanHost(Spec(), workers), "");
}

TEST(NoWorkerCanHostTest, NamesWhatTheFleetHas) {
  v1::ListWorkersResponse workers;
  *workers.add_workers() = Worker(8, "a100-80gb", "sim");
  *workers.add_workers() = Worker(8, "a100-80gb", "sim");
  *workers.add_workers() = Worker(4, "h100-80gb", "sim");
  *workers.add_workers() = Worker(8, "h100-80gb", "cuda");
  v1::Worker lost = Worker(8, "h100-80gb", "sim");
  lost.set_state(v1::WORKER_LOST);
  *workers.add_workers() = lost;
  EXPECT_EQ(NoWorkerCanHost(Spec(), workers),
            "no live worker can host this search (8 x h100-80gb per node, backend sim); live "
            "workers: 1 x 8 h100-80gb (cuda), 2 x 8 a100-80gb (sim), 1 x 4 h100-80gb (sim)");
  EXPECT_EQ(NoWorkerCanHost(Spec(), v1::ListWorkersResponse()),
            "no live worker can host this search (8 x h100-80gb per node, backend sim); live "
            "workers: none");
  v1::SearchSpec cuda = Spec();
  cuda.mutable_probe()->set_backend("cuda");
  EXPECT_EQ(NoWorkerCanHost(cuda, workers), "");
}

}  // namespace
}  // namespace paratune
