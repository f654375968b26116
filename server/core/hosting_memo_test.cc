#include "server/core/hosting_memo.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/core/launch_target.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;

const absl::Time kNow = absl::FromUnixSeconds(1000);

v1::RegisterWorkerRequest H100(int gpus) {
  v1::RegisterWorkerRequest request;
  request.set_hostname("node");
  for (int i = 0; i < gpus; ++i) {
    v1::Gpu& gpu = *request.add_gpus();
    gpu.set_index(i);
    gpu.set_name("NVIDIA H100 80GB HBM3");
    gpu.set_memory_bytes(85'520'809'984);
  }
  request.add_backends("sim");
  return request;
}

ProbeNeeds Needs(const std::string& probe, int64_t ranks) {
  ProbeNeeds needs;
  needs.probe = probe;
  needs.backend = "sim";
  needs.gpu_type = "h100-80gb";
  needs.gpus_per_node = 8;
  needs.ranks = ranks;
  return needs;
}

TEST(HostingMemoTest, AnswersAsTheRegistryForEveryNeed) {
  WorkerRegistry workers;
  workers.Add(H100(8), kNow);
  workers.Add(H100(8), kNow);
  HostingMemo hosting(workers);
  for (int64_t ranks : {8, 16, 24, 16, 8}) {
    const ProbeNeeds needs = Needs("searches/1/candidates/0/probes/1", ranks);
    EXPECT_EQ(hosting.WhyUnplaceable(needs), workers.WhyUnplaceable(needs)) << ranks;
    EXPECT_EQ(hosting.CanHost(needs), workers.CanHost(needs)) << ranks;
  }
  EXPECT_THAT(hosting.WhyUnplaceable(Needs("searches/1/candidates/1/probes/1", 24)),
              HasSubstr("they can host 2 of its 3 node shares"));
}

// Workers reserved for one probe host that probe only: two probes with equal needs differ.
TEST(HostingMemoTest, AProbeWithReservedWorkersIsAnsweredOnItsOwn) {
  WorkerRegistry workers;
  const std::string reserved = "searches/1/candidates/0/probes/1";
  const std::string other = "searches/1/candidates/1/probes/1";
  workers.Add(H100(8), kNow).worker.mutable_labels()->insert({kProbeReservationLabel, reserved});
  HostingMemo hosting(workers);
  EXPECT_TRUE(hosting.CanHost(Needs(reserved, 8)));
  EXPECT_FALSE(hosting.CanHost(Needs(other, 8)));
  EXPECT_TRUE(hosting.CanHost(Needs(reserved, 8)));
  EXPECT_EQ(hosting.WhyUnplaceable(Needs(other, 8)), workers.WhyUnplaceable(Needs(other, 8)));
}

}  // namespace
}  // namespace paratune
