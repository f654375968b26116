// End to end, a mixed fleet (issue 10): one paratune-server and sim workers of 64, 8 and 4
// H100-80GB and 8 A100-40GB run four searches at once. Every probe runs on workers of its
// search's GPU type only, one node share of gpus_per_node ranks per worker, with no
// infrastructure error and no re-queued probe.
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/autotuner_service.grpc.pb.h"
#include "proto/worker.pb.h"
#include "tests/test_cluster.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

// Bounds the wait for all searches together; they end in a few seconds.
constexpr absl::Duration kSearchesTimeout = absl::Seconds(90);

// One sim worker of the fleet: one node of `gpus` GPUs of `gpu_type`.
struct FleetWorker {
  std::string hostname;
  int64_t gpus = 0;
  std::string gpu_type;
};

const std::vector<FleetWorker>& Fleet() {
  static const std::vector<FleetWorker>* const fleet = new std::vector<FleetWorker>{
      {"h100-x64", 64, "h100-80gb"},
      {"h100-x8", 8, "h100-80gb"},
      {"h100-x4", 4, "h100-80gb"},
      {"a100-x8", 8, "a100-40gb"},
  };
  return *fleet;
}

// A search of the test, labelled A to D.
struct MixedSearch {
  std::string label;
  v1::CreateSearchRequest request;
  // Set once created.
  std::string name;
};

v1::CreateSearchRequest TopKSearch(const std::string& label, const std::string& preset,
                                   const std::string& gpu_type, int64_t nodes,
                                   int64_t gpus_per_node, int64_t global_batch, int64_t seq_len,
                                   int64_t top_k) {
  v1::CreateSearchRequest request;
  request.set_display_name(absl::StrCat("mixed fleet ", label));
  v1::SearchSpec& spec = *request.mutable_spec();
  spec.mutable_model()->set_preset(preset);
  spec.mutable_training()->set_global_batch_size(global_batch);
  spec.mutable_training()->set_seq_len(seq_len);
  spec.mutable_cluster()->mutable_gpu()->set_type(gpu_type);
  spec.mutable_cluster()->set_num_nodes(nodes);
  spec.mutable_cluster()->set_gpus_per_node(gpus_per_node);
  spec.set_policy(v1::TOP_K);
  spec.set_top_k(top_k);
  spec.mutable_probe()->set_backend("sim");
  // Every rank of the cluster: a probe of 2 x 4 needs two workers, one of 1 x 64 the 64-GPU
  // worker.
  spec.mutable_probe()->set_scope(v1::PROBE_SCOPE_FULL);
  return request;
}

std::vector<MixedSearch> Searches() {
  return {
      // The 64- or the 8-GPU worker; never the 4-GPU one (too small for a node of 8).
      {"A", TopKSearch("A", "llama3.1-8b", "h100-80gb", 1, 8, 64, 4096, 6)},
      // Node shares of 4: gangs of two H100 workers, the 4-GPU worker among them.
      {"B", TopKSearch("B", "llama3.1-8b", "h100-80gb", 2, 4, 256, 4096, 6)},
      // The A100 worker only.
      {"C", TopKSearch("C", "llama3.2-1b", "a100-40gb", 1, 8, 64, 2048, 4)},
      // One node of 64: the 64-GPU worker only.
      {"D", TopKSearch("D", "llama3.1-8b", "h100-80gb", 1, 64, 256, 4096, 3)},
  };
}

std::vector<v1::Worker> ListWorkers(TestCluster& cluster) {
  absl::StatusOr<std::vector<v1::Worker>> workers = cluster.ListWorkers();
  EXPECT_TRUE(workers.ok()) << workers.status();
  return workers.ok() ? *std::move(workers) : std::vector<v1::Worker>();
}

std::vector<v1::SearchEvent> ListEvents(TestCluster& cluster, const std::string& name) {
  absl::StatusOr<std::vector<v1::SearchEvent>> events = cluster.Events(name);
  EXPECT_TRUE(events.ok()) << name << ": " << events.status();
  return events.ok() ? *std::move(events) : std::vector<v1::SearchEvent>();
}

std::string Describe(const std::map<std::string, int64_t>& counts) {
  std::vector<std::string> parts;
  for (const auto& [key, count] : counts) parts.push_back(absl::StrCat(key, " ", count));
  return parts.empty() ? "none" : absl::StrJoin(parts, ", ");
}

TEST(E2eMixedFleetTest, ConcurrentSearchesRunOnlyOnWorkersOfTheirGpuTypeAndNodeSize) {
  std::vector<std::vector<std::string>> worker_flags;
  for (const FleetWorker& worker : Fleet()) {
    worker_flags.push_back({"--backend=sim", absl::StrCat("--sim_gpus=", worker.gpus),
                            absl::StrCat("--sim_gpu_type=", worker.gpu_type),
                            "--sim_probe_seconds=0.05",
                            absl::StrCat("--hostname=", worker.hostname)});
  }
  absl::StatusOr<std::unique_ptr<TestCluster>> started = TestCluster::Start(worker_flags);
  ASSERT_TRUE(started.ok()) << started.status();
  TestCluster& cluster = **started;

  // Worker name -> what the test started it as, by the hostname it registered.
  std::map<std::string, FleetWorker> started_as;
  for (const v1::Worker& worker : ListWorkers(cluster)) {
    for (const FleetWorker& fleet_worker : Fleet()) {
      if (worker.hostname() != fleet_worker.hostname) continue;
      EXPECT_EQ(worker.gpu_type(), fleet_worker.gpu_type) << worker.hostname();
      EXPECT_EQ(worker.gpus_size(), fleet_worker.gpus) << worker.hostname();
      started_as[worker.name()] = fleet_worker;
    }
  }
  ASSERT_EQ(started_as.size(), Fleet().size());

  const absl::Time started_searches = absl::Now();
  std::vector<MixedSearch> searches = Searches();
  for (MixedSearch& search : searches) {
    absl::StatusOr<v1::Search> created = cluster.CreateSearch(search.request);
    ASSERT_TRUE(created.ok()) << search.label << ": " << created.status();
    ASSERT_EQ(created->state(), v1::PROBING) << search.label << ": " << created->stop_reason();
    search.name = created->name();
  }
  // The searches run at once; each wait ends as soon as its search has.
  const absl::Time give_up = absl::Now() + kSearchesTimeout;
  std::vector<v1::Search> ended;
  for (const MixedSearch& search : searches) {
    absl::StatusOr<v1::Search> done = cluster.WaitUntilEnded(search.name, give_up - absl::Now());
    ASSERT_TRUE(done.ok()) << search.label << ": " << done.status();
    ended.push_back(*std::move(done));
  }
  const absl::Duration elapsed = absl::Now() - started_searches;

  // Probe shares by worker and by search label, from the results' ran_on.
  std::map<std::string, std::map<std::string, int64_t>> shares_by_worker;
  std::printf("mixed fleet: %zu searches at once ended in %s\n", searches.size(),
              absl::FormatDuration(absl::Trunc(elapsed, absl::Milliseconds(10))).c_str());
  for (size_t i = 0; i < searches.size(); ++i) {
    const MixedSearch& mixed = searches[i];
    const v1::Search& search = ended[i];
    const v1::ClusterSpec& cluster_spec = mixed.request.spec().cluster();
    const std::string& gpu_type = cluster_spec.gpu().type();
    const int64_t gpus_per_node = cluster_spec.gpus_per_node();
    const int64_t cluster_gpus = cluster_spec.num_nodes() * gpus_per_node;
    SCOPED_TRACE(absl::StrCat(mixed.label, " ", search.name()));

    EXPECT_EQ(search.state(), v1::SUCCEEDED) << search.stop_reason();
    EXPECT_EQ(search.counts().succeeded(), mixed.request.spec().top_k());
    EXPECT_EQ(search.counts().failed(), 0);
    EXPECT_EQ(search.counts().failed_by_outcome().count("PROBE_INFRA_ERROR"), 0u);
    EXPECT_EQ(search.candidates_size(), mixed.request.spec().top_k());

    std::map<std::string, int64_t> probes_by_worker;
    int gangs = 0;
    for (const v1::Candidate& candidate : search.candidates()) {
      const v1::ProbeResult& result = candidate.probe_result();
      EXPECT_EQ(candidate.state(), v1::CANDIDATE_PROBED) << candidate.name();
      EXPECT_EQ(result.outcome(), v1::PROBE_OK) << candidate.name() << ": " << result.message();
      EXPECT_EQ(candidate.attempts(), 1) << candidate.name();
      EXPECT_THAT(candidate.waiting_reason(), IsEmpty()) << candidate.name();
      // One worker per node of the cluster, each with a whole node's share.
      ASSERT_EQ(result.ran_on_size(), cluster_spec.num_nodes()) << candidate.name();
      gangs += result.ran_on_size() > 1;
      int64_t ranks = 0;
      std::set<std::string> workers;
      for (const v1::ProbeHost& host : result.ran_on()) {
        EXPECT_EQ(host.gpu_type(), gpu_type) << candidate.name() << " on " << host.worker();
        EXPECT_EQ(host.first_rank(), ranks) << candidate.name() << " on " << host.worker();
        EXPECT_EQ(host.num_ranks(), gpus_per_node) << candidate.name() << " on " << host.worker();
        ranks += host.num_ranks();
        EXPECT_TRUE(workers.insert(host.worker()).second)
            << candidate.name() << " ran twice on " << host.worker();
        auto it = started_as.find(host.worker());
        if (it == started_as.end()) {
          ADD_FAILURE() << candidate.name() << " ran on " << host.worker()
                        << ", which the test did not start";
          continue;
        }
        const FleetWorker& fleet_worker = it->second;
        EXPECT_EQ(fleet_worker.gpu_type, gpu_type) << candidate.name() << " on " << host.worker();
        EXPECT_EQ(host.hostname(), fleet_worker.hostname) << candidate.name();
        EXPECT_LE(host.num_ranks(), fleet_worker.gpus)
            << candidate.name() << " on " << host.worker();
        ++probes_by_worker[fleet_worker.hostname];
        ++shares_by_worker[fleet_worker.hostname][mixed.label];
      }
      EXPECT_EQ(ranks, cluster_gpus) << candidate.name();
    }

    for (const v1::SearchEvent& event : ListEvents(cluster, search.name())) {
      EXPECT_NE(event.outcome(), v1::PROBE_INFRA_ERROR) << event.text();
      EXPECT_NE(event.kind(), v1::EVENT_REQUEUED) << event.text();
      EXPECT_NE(event.kind(), v1::EVENT_GAVE_UP) << event.text();
      // The fleet can host every search: no candidate ever waits for lack of workers.
      EXPECT_NE(event.kind(), v1::EVENT_WAITING) << event.text();
    }

    std::printf(
        "  %s %s: %s %lld x %lld %s (top %lld): %s, %lld probes (%d gangs) on %s\n",
        mixed.label.c_str(), search.name().c_str(), mixed.request.spec().model().preset().c_str(),
        static_cast<long long>(cluster_spec.num_nodes()), static_cast<long long>(gpus_per_node),
        gpu_type.c_str(), static_cast<long long>(mixed.request.spec().top_k()),
        v1::SearchState_Name(search.state()).c_str(),
        static_cast<long long>(search.counts().probed()), gangs,
        Describe(probes_by_worker).c_str());
  }

  // Every worker ran something, of its own GPU type's searches only; a worker's
  // probes_completed counts each probe share it reported.
  for (const v1::Worker& worker : ListWorkers(cluster)) {
    auto it = started_as.find(worker.name());
    ASSERT_NE(it, started_as.end()) << worker.name();
    const FleetWorker& fleet_worker = it->second;
    const std::map<std::string, int64_t>& shares = shares_by_worker[fleet_worker.hostname];
    int64_t total = 0;
    for (const auto& [label, count] : shares) total += count;
    std::printf("  %s %s (%lld x %s): %lld probe shares (%s)\n", worker.name().c_str(),
                fleet_worker.hostname.c_str(), static_cast<long long>(fleet_worker.gpus),
                fleet_worker.gpu_type.c_str(), static_cast<long long>(total),
                Describe(shares).c_str());
    EXPECT_GT(total, 0) << fleet_worker.hostname << " ran nothing";
    EXPECT_EQ(worker.probes_completed(), total) << fleet_worker.hostname;
  }
  // Only the A100 worker ran the A100 search, and it ran nothing else.
  EXPECT_EQ(shares_by_worker["a100-x8"], (std::map<std::string, int64_t>{{"C", 4}}));
  // The 4-GPU worker is too small for a node of 8 or 64: it ran node shares of 4 (search B)
  // only.
  for (const auto& [label, count] : shares_by_worker["h100-x4"]) {
    EXPECT_EQ(label, "B") << "h100-x4 ran " << count << " probes of search " << label;
  }
  // Nodes of 64 fit the 64-GPU worker only.
  EXPECT_EQ(shares_by_worker["h100-x64"]["D"], 3);
}

}  // namespace
}  // namespace paratune

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (!paratune::SetTestBinaries(argc, argv)) {
    std::fprintf(stderr, "usage: e2e_mixed_fleet_test PARATUNE_SERVER PARATUNE_WORKER\n");
    return 2;
  }
  return RUN_ALL_TESTS();
}
