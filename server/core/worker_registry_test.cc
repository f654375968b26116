#include "server/core/worker_registry.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/core/launch_target.h"

namespace paratune {
namespace {

using ::testing::ElementsAre;
using ::testing::FieldsAre;

v1::RegisterWorkerRequest Request(int gpus, const std::string& device, int64_t memory_bytes) {
  v1::RegisterWorkerRequest request;
  request.set_hostname("node");
  for (int i = 0; i < gpus; ++i) {
    v1::Gpu& gpu = *request.add_gpus();
    gpu.set_index(i);
    gpu.set_name(device);
    gpu.set_memory_bytes(memory_bytes);
  }
  request.add_backends("sim");
  return request;
}

v1::RegisterWorkerRequest H100(int gpus) {
  return Request(gpus, "NVIDIA H100 80GB HBM3", 85'520'809'984);
}

ProbeNeeds Needs(int64_t ranks, int64_t gpus_per_node) {
  ProbeNeeds needs;
  needs.probe = "searches/1/candidates/0/probes/1";
  needs.kind.backend = "sim";
  needs.kind.gpu_type = "h100-80gb";
  needs.gpus_per_node = gpus_per_node;
  needs.ranks = ranks;
  return needs;
}

const absl::Time kNow = absl::FromUnixSeconds(1000);

TEST(WorkerRegistryTest, RegistersWithTheMatchedGpuTypeAndNeverReusesIds) {
  WorkerRegistry workers;
  workers.ReserveIdsThrough(4);
  WorkerRegistry::Record& h100 = workers.Add(H100(8), kNow);
  EXPECT_EQ(h100.worker.name(), "workers/5");
  EXPECT_EQ(h100.worker.gpu_type(), "h100-80gb");
  EXPECT_EQ(h100.worker.state(), v1::WORKER_IDLE);
  EXPECT_EQ(workers.Add(Request(8, "NVIDIA L40S", 48'305'799'168), kNow).worker.gpu_type(), "");
  workers.Remove(6);
  EXPECT_EQ(workers.Add(H100(8), kNow).worker.name(), "workers/7");
  EXPECT_EQ(workers.Find(6), nullptr);
  EXPECT_EQ(workers.FindLive("workers/6").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(workers.FindLive("six").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(WorkerRegistryTest, SilentWorkersAndLostOnes) {
  WorkerRegistry workers;
  workers.Add(H100(8), kNow);
  WorkerRegistry::Record& recent = workers.Add(H100(8), kNow);
  recent.last_heartbeat = kNow + absl::Seconds(5);
  EXPECT_THAT(workers.Silent(kNow + absl::Seconds(7), absl::Seconds(6)), ElementsAre(1));
  workers.Mutable(1).worker.set_state(v1::WORKER_LOST);
  EXPECT_TRUE(workers.Silent(kNow + absl::Seconds(7), absl::Seconds(6)).empty());
  EXPECT_EQ(workers.FindLive("workers/1").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(workers.Live().size(), 1u);
}

TEST(WorkerRegistryTest, PlacesOneNodeSharePerWorkerOfTheSearchsType) {
  WorkerRegistry workers;
  WorkerRegistry::Record& small = workers.Add(H100(4), kNow);
  WorkerRegistry::Record& big = workers.Add(H100(64), kNow);
  workers.Add(Request(8, "simulated A100-40GB", 42'949'672'960), kNow);
  WorkerRegistry::Record& node = workers.Add(H100(8), kNow);

  // 2 nodes of 8: the small worker holds no share, the A100 one is not eligible.
  EXPECT_FALSE(workers.Place(Needs(16, 8), small, kNow).has_value());
  std::optional<std::vector<RankShare>> shares = workers.Place(Needs(16, 8), big, kNow);
  ASSERT_TRUE(shares.has_value());
  EXPECT_THAT(*shares, ElementsAre(FieldsAre(2, 0, 8), FieldsAre(4, 8, 8)));
  EXPECT_TRUE(workers.CanHost(Needs(16, 8)));
  EXPECT_FALSE(workers.CanHost(Needs(24, 8)));

  // A busy worker is eligible for the fleet's capacity, not for placement.
  node.worker.set_current_probe("searches/9/candidates/0/probes/1");
  EXPECT_FALSE(workers.Place(Needs(16, 8), big, kNow).has_value());
  EXPECT_TRUE(workers.CanHost(Needs(16, 8)));
}

TEST(WorkerRegistryTest, AOneNodeProbeIsLeftToATighterWorkerThatIsAsking) {
  WorkerRegistry workers;
  WorkerRegistry::Record& big = workers.Add(H100(64), kNow);
  WorkerRegistry::Record& node = workers.Add(H100(8), kNow);
  // The 8-GPU worker has not asked: the 64-GPU one takes the one-node probe.
  EXPECT_TRUE(workers.Place(Needs(8, 8), big, kNow).has_value());
  // It is parked in its long poll: the probe is left to it.
  node.last_asked = kNow - absl::Seconds(30);
  EXPECT_FALSE(workers.Place(Needs(8, 8), big, kNow).has_value());
  EXPECT_TRUE(workers.Place(Needs(8, 8), node, kNow).has_value());
  // A worker that stopped asking holds nothing back.
  EXPECT_TRUE(workers.Place(Needs(8, 8), big, kNow + absl::Minutes(2)).has_value());
  // Nor is a probe of several nodes held back: it needs both.
  EXPECT_TRUE(workers.Place(Needs(16, 8), big, kNow).has_value());
}

TEST(WorkerRegistryTest, WhyUnplaceableNamesTheNeedAndTheFleet) {
  WorkerRegistry workers;
  workers.Add(Request(8, "simulated A100-40GB", 42'949'672'960), kNow);
  EXPECT_EQ(workers.WhyUnplaceable(Needs(8, 8)),
            "needs 1 node of 8 x h100-80gb with backend sim; live workers: 1 x 8 a100-40gb "
            "(sim); they can host 0 of its 1 node shares");
  workers.Add(H100(8), kNow);
  EXPECT_EQ(workers.WhyUnplaceable(Needs(8, 8)), "");
}

TEST(WorkerRegistryTest, ReservedWorkersServeTheirProbeOnly) {
  WorkerRegistry workers;
  v1::RegisterWorkerRequest reserved = H100(8);
  (*reserved.mutable_labels())[kProbeReservationLabel] = "searches/1/candidates/0/probes/1";
  WorkerRegistry::Record& job_worker = workers.Add(reserved, kNow);
  WorkerRegistry::Record& other = workers.Add(H100(8), kNow);
  EXPECT_THAT(workers.ReservedWorkers("searches/1/candidates/0/probes/1"), ElementsAre(1));
  EXPECT_FALSE(workers.Place(Needs(8, 8), other, kNow).has_value());
  EXPECT_TRUE(workers.Place(Needs(8, 8), job_worker, kNow).has_value());
  ProbeNeeds another = Needs(8, 8);
  another.probe = "searches/1/candidates/1/probes/1";
  EXPECT_FALSE(workers.Place(another, job_worker, kNow).has_value());
  EXPECT_TRUE(workers.Place(another, other, kNow).has_value());
}

}  // namespace
}  // namespace paratune
