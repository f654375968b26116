// End to end: a real paratune-server and two sim paratune-workers run whole searches.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "convert/search_view.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/autotuner_service.grpc.pb.h"
#include "proto/worker.pb.h"
#include "tests/test_cluster.h"

namespace paratune {
namespace {

using ::testing::Ge;
using ::testing::HasSubstr;

constexpr absl::Duration kRpcTimeout = absl::Seconds(30);
constexpr absl::Duration kSearchTimeout = absl::Seconds(120);

// Two workers of different sizes. Each stands for one node, however many GPUs it has.
std::unique_ptr<TestCluster> StartTwoWorkers() {
  absl::StatusOr<std::unique_ptr<TestCluster>> cluster = TestCluster::Start({
      {"--backend=sim", "--sim_gpus=16", "--sim_gpu_type=h100-94gb", "--sim_probe_seconds=0.05"},
      {"--backend=sim", "--sim_gpus=8", "--sim_gpu_type=h100-94gb", "--sim_probe_seconds=0.05"},
  });
  EXPECT_TRUE(cluster.ok()) << cluster.status();
  return cluster.ok() ? *std::move(cluster) : nullptr;
}

v1::CreateSearchRequest SearchRequest(const std::string& preset, const std::string& gpu,
                                      int64_t nodes, int64_t gpus_per_node, int64_t global_batch,
                                      int64_t seq_len) {
  v1::CreateSearchRequest request;
  request.set_display_name(preset + " e2e");
  v1::SearchSpec& spec = *request.mutable_spec();
  spec.mutable_model()->set_preset(preset);
  spec.mutable_training()->set_global_batch_size(global_batch);
  spec.mutable_training()->set_seq_len(seq_len);
  spec.mutable_cluster()->mutable_gpu()->set_type(gpu);
  spec.mutable_cluster()->set_num_nodes(nodes);
  spec.mutable_cluster()->set_gpus_per_node(gpus_per_node);
  spec.mutable_probe()->set_backend("sim");
  return request;
}

// Creates the search, follows it to the end and returns its final state.
v1::Search RunSearch(TestCluster& cluster, const v1::CreateSearchRequest& request,
                     std::vector<v1::WatchSearchResponse>* events) {
  absl::StatusOr<v1::Search> search = cluster.RunSearch(request, kSearchTimeout, events);
  EXPECT_TRUE(search.ok()) << search.status();
  return search.ok() ? *std::move(search) : v1::Search();
}

void ExpectRankedAndSimulated(const v1::Search& search) {
  double previous = 1e300;
  for (const v1::Candidate& candidate : search.candidates()) {
    EXPECT_EQ(candidate.state(), v1::CANDIDATE_PROBED) << candidate.name();
    const v1::ProbeResult& result = candidate.probe_result();
    EXPECT_EQ(result.outcome(), v1::PROBE_OK) << candidate.name() << ": " << result.message();
    EXPECT_TRUE(result.simulated()) << candidate.name();
    EXPECT_EQ(result.backend(), "sim");
    EXPECT_THAT(result.message(), HasSubstr("simulated"));
    EXPECT_GT(result.model_tflops_per_gpu(), 0) << candidate.name();
    EXPECT_LE(result.model_tflops_per_gpu(), previous) << candidate.name() << " out of order";
    previous = result.model_tflops_per_gpu();
    EXPECT_THAT(candidate.worker(), HasSubstr("workers/"));
  }
}

TEST(E2eSearchTest, TopKOnFourNodesProbesEverySelectedCandidate) {
  std::unique_ptr<TestCluster> cluster = StartTwoWorkers();
  ASSERT_NE(cluster, nullptr);
  v1::CreateSearchRequest request = SearchRequest("llama3.1-8b", "h100-94gb", 4, 4, 1024, 8192);
  request.mutable_spec()->set_policy(v1::TOP_K);
  request.mutable_spec()->set_top_k(6);

  std::vector<v1::WatchSearchResponse> events;
  const v1::Search search = RunSearch(*cluster, request, &events);

  EXPECT_EQ(search.state(), v1::SUCCEEDED) << search.stop_reason();
  const v1::SearchCounts& counts = search.counts();
  EXPECT_THAT(counts.enumerated(), Ge(counts.valid()));
  EXPECT_THAT(counts.valid(), Ge(counts.memory_safe()));
  EXPECT_THAT(counts.memory_safe(), Ge(counts.selected()));
  EXPECT_EQ(counts.selected(), 6);
  EXPECT_EQ(counts.probed(), 6);
  EXPECT_EQ(counts.succeeded(), 6);
  EXPECT_EQ(counts.failed(), 0);
  ASSERT_EQ(search.candidates_size(), 6);
  ExpectRankedAndSimulated(search);
  EXPECT_THAT(search.stop_reason(), HasSubstr("probed all 6 selected candidates; best dp"));
  EXPECT_THAT(search.stop_reason(), HasSubstr("TFLOP/s per GPU (simulated)"));

  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.front().events_size(), 0);
  EXPECT_EQ(events.back().search().state(), v1::SUCCEEDED);
  int probed_events = 0;
  for (const v1::WatchSearchResponse& response : events) {
    for (const v1::SearchEvent& event : response.events()) {
      if (event.kind() != v1::EVENT_PROBED) continue;
      ++probed_events;
      EXPECT_EQ(event.outcome(), v1::PROBE_OK);
      EXPECT_EQ(event.result_source(), "simulated");
      EXPECT_GT(event.tflops_per_gpu(), 0);
      EXPECT_THAT(event.text(), HasSubstr(" probed on workers/"));
    }
  }
  EXPECT_EQ(probed_events, 6);
  // The stream's changes, applied in turn, give what GetSearch gives.
  WatchedSearch watched;
  for (const v1::WatchSearchResponse& response : events) ASSERT_TRUE(watched.Apply(response).ok());
  EXPECT_EQ(watched.View().SerializeAsString(), search.SerializeAsString());
  for (size_t i = 1; i < events.size(); ++i) {
    EXPECT_EQ(events[i].search().candidates_size(), 0) << "change " << i << " resent the search";
    EXPECT_LE(events[i].changed_candidates_size(), 6);
  }

  v1::ListWorkersResponse workers;
  ASSERT_TRUE(
      cluster->autotuner()
          .ListWorkers(ContextWithTimeout(kRpcTimeout).get(), v1::ListWorkersRequest(), &workers)
          .ok());
  ASSERT_EQ(workers.workers_size(), 2);
  int64_t completed = 0;
  for (const v1::Worker& worker : workers.workers()) {
    EXPECT_EQ(worker.backends_size(), 1);
    EXPECT_THAT(worker.gpus(0).name(), HasSubstr("simulated H100-94GB"));
    completed += worker.probes_completed();
  }
  // Two workers are two of the four nodes: every probe ran one replica, on one node or on a
  // gang of both (a replica of 8 GPUs is two nodes of 4).
  EXPECT_GE(completed, 6);
  EXPECT_LE(completed, 12);
  for (const v1::Candidate& candidate : search.candidates()) {
    const v1::ProbeResult& result = candidate.probe_result();
    ASSERT_GE(result.ran_on_size(), 1) << candidate.name();
    for (const v1::ProbeHost& host : result.ran_on()) {
      EXPECT_EQ(host.gpu_type(), "h100-94gb") << candidate.name();
      EXPECT_LE(host.num_ranks(), 4) << candidate.name();
    }
  }
}

// Full-scope probes of an 8-GPU cluster on two 4-GPU workers: every probe runs as a gang of
// both, ranks 0-3 on one and 4-7 on the other.
TEST(E2eSearchTest, GangProbesSpanWorkersTooSmallForThem) {
  absl::StatusOr<std::unique_ptr<TestCluster>> cluster = TestCluster::Start({
      {"--backend=sim", "--sim_gpus=4", "--sim_gpu_type=h100-94gb", "--sim_probe_seconds=0.05"},
      {"--backend=sim", "--sim_gpus=4", "--sim_gpu_type=h100-94gb", "--sim_probe_seconds=0.05"},
  });
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  v1::CreateSearchRequest request = SearchRequest("llama3.1-8b", "h100-94gb", 2, 4, 512, 8192);
  request.mutable_spec()->set_policy(v1::TOP_K);
  request.mutable_spec()->set_top_k(3);
  request.mutable_spec()->mutable_probe()->set_scope(v1::PROBE_SCOPE_FULL);

  std::vector<v1::WatchSearchResponse> events;
  const v1::Search search = RunSearch(**cluster, request, &events);

  EXPECT_EQ(search.state(), v1::SUCCEEDED) << search.stop_reason();
  EXPECT_EQ(search.counts().succeeded(), 3);
  ExpectRankedAndSimulated(search);
  // Each probe needed both workers, so each ran its ranks of all three.
  v1::ListWorkersResponse workers;
  ASSERT_TRUE(
      (*cluster)
          ->autotuner()
          .ListWorkers(ContextWithTimeout(kRpcTimeout).get(), v1::ListWorkersRequest(), &workers)
          .ok());
  ASSERT_EQ(workers.workers_size(), 2);
  for (const v1::Worker& worker : workers.workers()) {
    EXPECT_EQ(worker.probes_completed(), 3) << worker.name();
  }
  int gang_results = 0;
  for (const v1::WatchSearchResponse& response : events) {
    for (const v1::SearchEvent& event : response.events()) {
      gang_results += event.kind() == v1::EVENT_PROBED && event.workers_size() == 2;
    }
  }
  EXPECT_GE(gang_results, 1);
}

TEST(E2eSearchTest, ExhaustiveOnOneNodeProbesEveryMemorySafeCandidate) {
  std::unique_ptr<TestCluster> cluster = StartTwoWorkers();
  ASSERT_NE(cluster, nullptr);
  v1::CreateSearchRequest request = SearchRequest("llama3.2-1b", "h100-94gb", 1, 8, 64, 4096);
  request.mutable_spec()->set_policy(v1::EXHAUSTIVE);

  std::vector<v1::WatchSearchResponse> events;
  const v1::Search search = RunSearch(*cluster, request, &events);

  EXPECT_EQ(search.state(), v1::SUCCEEDED) << search.stop_reason();
  const v1::SearchCounts& counts = search.counts();
  EXPECT_GT(counts.selected(), 6);
  EXPECT_EQ(counts.selected(), counts.memory_safe());
  EXPECT_EQ(counts.probed(), counts.selected());
  EXPECT_EQ(counts.succeeded(), counts.selected());
  EXPECT_EQ(search.candidates_size(), counts.selected());
  ExpectRankedAndSimulated(search);
}

}  // namespace
}  // namespace paratune

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (!paratune::SetTestBinaries(argc, argv)) {
    std::fprintf(stderr, "usage: e2e_search_test PARATUNE_SERVER PARATUNE_WORKER\n");
    return 2;
  }
  return RUN_ALL_TESTS();
}
