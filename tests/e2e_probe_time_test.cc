// End-to-end: probes that take model time (issue 11). A real paratune-server and a sim
// paratune-worker with --sim_time_scale=0.01 (a probe sleeps 1% of the duration it stands
// for on real GPUs): a probe whose deadline is shorter than its modelled duration times out;
// one under its derived deadline runs its short steps, extrapolates the full step, and the
// search's GPU-seconds are the real-equivalent cost.
#include <cstdio>
#include <memory>
#include <string>

#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/autotuner_service.grpc.pb.h"
#include "server/core/test_requests.h"
#include "tests/test_cluster.h"

namespace paratune {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

constexpr absl::Duration kSearchTimeout = absl::Seconds(60);

std::unique_ptr<TestCluster> StartScaledWorker() {
  absl::StatusOr<std::unique_ptr<TestCluster>> cluster = TestCluster::Start(
      {{"--backend=sim", "--sim_gpus=8", "--sim_gpu_type=h100-80gb", "--sim_time_scale=0.01"}});
  EXPECT_TRUE(cluster.ok()) << cluster.status();
  return cluster.ok() ? *std::move(cluster) : nullptr;
}

TEST(E2eProbeTimeTest, AProbeLongerThanItsDeadlineTimesOut) {
  std::unique_ptr<TestCluster> cluster = StartScaledWorker();
  ASSERT_NE(cluster, nullptr);
  // Every probe stands for at least 30 s of start-up on real GPUs.
  v1::CreateSearchRequest request = SmallSimSearch(1);
  request.mutable_spec()->mutable_probe()->set_deadline_seconds(20);
  absl::StatusOr<v1::Search> search = cluster->RunSearch(request, kSearchTimeout);
  ASSERT_TRUE(search.ok()) << search.status();
  EXPECT_EQ(search->state(), v1::FAILED);
  ASSERT_EQ(search->candidates_size(), 1);
  const v1::ProbeResult& result = search->candidates(0).probe_result();
  EXPECT_EQ(result.outcome(), v1::PROBE_TIMEOUT);
  EXPECT_THAT(result.message(), HasSubstr("over its deadline of 20 s"));
  EXPECT_EQ(result.wall_seconds(), 20);
  std::printf("probe time: %s\n", result.message().c_str());
}

TEST(E2eProbeTimeTest, AProbeUnderItsDerivedDeadlineRunsShortStepsAtRealCost) {
  std::unique_ptr<TestCluster> cluster = StartScaledWorker();
  ASSERT_NE(cluster, nullptr);
  // 1024 sequences: every candidate has far more micro-batches than its short steps.
  v1::CreateSearchRequest request = SmallSimSearch(2);
  request.mutable_spec()->mutable_training()->set_global_batch_size(1024);
  absl::StatusOr<v1::Search> search = cluster->RunSearch(request, kSearchTimeout);
  ASSERT_TRUE(search.ok()) << search.status();
  EXPECT_EQ(search->state(), v1::SUCCEEDED) << search->stop_reason();
  double gpu_seconds = 0;
  for (const v1::Candidate& candidate : search->candidates()) {
    const v1::ProbeResult& result = candidate.probe_result();
    ASSERT_EQ(result.outcome(), v1::PROBE_OK) << candidate.name() << ": " << result.message();
    EXPECT_TRUE(result.simulated());
    EXPECT_EQ(result.short_steps_size(), 2) << candidate.name();
    EXPECT_THAT(result.extrapolated(), Contains("full_step"));
    EXPECT_GT(result.extrapolation().slot_seconds(), 0);
    // The real duration it stands for: 30 s of start-up and the steps.
    EXPECT_GT(result.wall_seconds(), 30) << candidate.name();
    gpu_seconds += result.wall_seconds() * 8;
    std::printf("probe time: %s: %.0f s modelled, short steps of %lld and %lld micro-batches\n",
                candidate.name().c_str(), result.wall_seconds(),
                static_cast<long long>(result.short_steps(0).micro_batches()),
                static_cast<long long>(result.short_steps(1).micro_batches()));
  }
  EXPECT_NEAR(search->counts().gpu_seconds(), gpu_seconds, 1e-6 * gpu_seconds);
}

}  // namespace
}  // namespace paratune

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (!paratune::SetTestBinaries(argc, argv)) {
    std::fprintf(stderr, "usage: e2e_probe_time_test PARATUNE_SERVER PARATUNE_WORKER\n");
    return 2;
  }
  return RUN_ALL_TESTS();
}
