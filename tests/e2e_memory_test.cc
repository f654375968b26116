// End to end, the memory-risky band (issue 12, docs/memory.md): a real paratune-server and a
// sim paratune-worker. A search probes RISKY candidates by default (MEASURE_RISKY); the sim's
// true peak memory is the estimate x a seeded per-configuration factor, so a RISKY candidate
// may fit and win, or run out of memory and calibrate the search's estimate.
//
// The sim is deterministic given the spec's seed and the configuration, so each seed below
// was chosen by running the search and is named with what it gives.
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "convert/search_text.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/autotuner_service.grpc.pb.h"
#include "tests/test_cluster.h"

namespace paratune {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

// Bounds each search; with probes of 20 ms each ends in well under a second.
constexpr absl::Duration kSearchTimeout = absl::Seconds(60);
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::unique_ptr<TestCluster> StartSimWorker(int gpus) {
  absl::StatusOr<std::unique_ptr<TestCluster>> cluster =
      TestCluster::Start({{"--backend=sim", absl::StrFormat("--sim_gpus=%d", gpus),
                           "--sim_gpu_type=h100-80gb", "--sim_probe_seconds=0.02"}});
  EXPECT_TRUE(cluster.ok()) << cluster.status();
  return cluster.ok() ? *std::move(cluster) : nullptr;
}

// Llama-3.1-8B, global batch 64, sequence 8192 on one node of `gpus` H100-80GB with the sim
// backend, micro-batch sizes `micro_batch_sizes` only; memory_policy left to its default.
v1::CreateSearchRequest MemorySearch(int64_t gpus, const std::vector<int64_t>& micro_batch_sizes,
                                     v1::SearchPolicy policy, uint64_t seed) {
  v1::CreateSearchRequest request;
  request.set_display_name("memory-risky band");
  v1::SearchSpec& spec = *request.mutable_spec();
  spec.mutable_model()->set_preset("llama3.1-8b");
  spec.mutable_training()->set_global_batch_size(64);
  spec.mutable_training()->set_seq_len(8192);
  spec.mutable_cluster()->mutable_gpu()->set_type("h100-80gb");
  spec.mutable_cluster()->set_num_nodes(1);
  spec.mutable_cluster()->set_gpus_per_node(gpus);
  for (int64_t size : micro_batch_sizes) spec.mutable_space()->add_micro_batch_sizes(size);
  spec.set_policy(policy);
  spec.mutable_probe()->set_backend("sim");
  spec.set_seed(seed);
  return request;
}

std::string Describe(const v1::ParallelConfig& config) {
  return absl::StrFormat("dp%d tp%d pp%d cp%d mbs%d", config.data_parallel(),
                         config.tensor_parallel(), config.pipeline_parallel(),
                         config.context_parallel(), config.micro_batch_size());
}

std::string Describe(const v1::Candidate& candidate) {
  return absl::StrFormat("%s (%s, estimated %.1f%%)", Describe(candidate.config()),
                         v1::MemoryVerdict_Name(candidate.memory().verdict()),
                         100 * candidate.memory().fraction_of_capacity());
}

// The candidate of `search` with the configuration `config` describes; null when none.
const v1::Candidate* FindCandidate(const v1::Search& search, const std::string& config) {
  for (const v1::Candidate& candidate : search.candidates()) {
    if (Describe(candidate.config()) == config) return &candidate;
  }
  return nullptr;
}

void PrintRanked(const char* label, const v1::Search& search) {
  std::printf("%s: %s %s, %s\n", label, search.name().c_str(),
              v1::SearchState_Name(search.state()).c_str(), search.stop_reason().c_str());
  for (const v1::Candidate& candidate : search.candidates()) {
    const v1::ProbeResult& result = candidate.probe_result();
    std::printf("  %-44s calibrated %-13s %-19s %6.1f TFLOP/s per GPU, peak %.2f GiB\n",
                Describe(candidate).c_str(),
                v1::MemoryVerdict_Name(candidate.calibrated_memory().verdict()).c_str(),
                v1::ProbeOutcome_Name(result.outcome()).c_str(), result.model_tflops_per_gpu(),
                result.peak_memory_bytes() / kGiB);
  }
}

// 4 GPUs, micro-batch size 1: five candidates. Two are RISKY (dp1 tp1 pp2 cp2 at 84.9% of
// capacity and dp2 tp2 pp1 cp1 at 87.2%) and predicted about 7% faster than the best SAFE
// one. EXHAUSTIVE probes all five, so the two searches measure every SAFE candidate alike:
// the same seed gives each configuration the same noise. With seed 1 both RISKY candidates
// fit (running out would take a true peak 15 to 18% above the estimate: 2.7 to 3.3 sigma) and
// dp2 tp2 pp1 cp1 measures 533.1 TFLOP/s per GPU against 486.2 for the best SAFE one.
TEST(E2eMemoryTest, ARiskyCandidateWinsWhereSafeOnlyEndsSlower) {
  std::unique_ptr<TestCluster> cluster = StartSimWorker(4);
  ASSERT_NE(cluster, nullptr);

  const v1::CreateSearchRequest request = MemorySearch(4, {1}, v1::EXHAUSTIVE, 1);
  absl::StatusOr<v1::Search> risky = cluster->RunSearch(request, kSearchTimeout);
  ASSERT_TRUE(risky.ok()) << risky.status();
  PrintRanked("default (MEASURE_RISKY)", *risky);
  EXPECT_EQ(risky->spec().space().memory_policy(), v1::MEASURE_RISKY);
  EXPECT_EQ(risky->state(), v1::SUCCEEDED) << risky->stop_reason();
  EXPECT_EQ(risky->counts().failed(), 0);
  EXPECT_EQ(risky->memory_calibration().out_of_memory(), 0);
  ASSERT_GE(risky->candidates_size(), 1);
  const v1::Candidate& winner = risky->candidates(0);
  ASSERT_EQ(winner.probe_result().outcome(), v1::PROBE_OK)
      << winner.name() << ": " << winner.probe_result().message();
  EXPECT_EQ(winner.memory().verdict(), v1::RISKY) << Describe(winner);
  // It fits, above the 80% line: its (modelled) peak is in the band the rule would not try.
  const double capacity = static_cast<double>(winner.memory().capacity_bytes());
  EXPECT_GT(winner.probe_result().peak_memory_bytes(), winner.memory().safe_threshold() * capacity)
      << Describe(winner);
  EXPECT_LT(winner.probe_result().peak_memory_bytes(), capacity) << Describe(winner);

  v1::CreateSearchRequest safe_request = request;
  safe_request.mutable_spec()->mutable_space()->set_memory_policy(v1::SAFE_ONLY);
  absl::StatusOr<v1::Search> safe = cluster->RunSearch(safe_request, kSearchTimeout);
  ASSERT_TRUE(safe.ok()) << safe.status();
  PrintRanked("SAFE_ONLY", *safe);
  EXPECT_EQ(safe->state(), v1::SUCCEEDED) << safe->stop_reason();
  EXPECT_GT(safe->counts().memory_risky(), 0);
  for (const v1::Candidate& candidate : safe->candidates()) {
    EXPECT_EQ(candidate.memory().verdict(), v1::SAFE) << Describe(candidate);
  }
  ASSERT_GE(safe->candidates_size(), 1);
  const v1::Candidate& safe_best = safe->candidates(0);
  ASSERT_EQ(safe_best.probe_result().outcome(), v1::PROBE_OK)
      << safe_best.name() << ": " << safe_best.probe_result().message();
  EXPECT_LT(safe_best.probe_result().model_tflops_per_gpu(),
            winner.probe_result().model_tflops_per_gpu())
      << "SAFE_ONLY's best " << Describe(safe_best) << " against " << Describe(winner);
  // The same measurement in both searches: the difference is what the risky band holds, not
  // noise between runs.
  const v1::Candidate* same = FindCandidate(*risky, Describe(safe_best.config()));
  ASSERT_NE(same, nullptr) << Describe(safe_best) << " is not among the default's candidates";
  EXPECT_DOUBLE_EQ(same->probe_result().model_tflops_per_gpu(),
                   safe_best.probe_result().model_tflops_per_gpu());
  std::printf("risky winner %s at %.1f TFLOP/s per GPU, %.1f%% faster than SAFE_ONLY's %s\n",
              Describe(winner).c_str(), winner.probe_result().model_tflops_per_gpu(),
              100 * (winner.probe_result().model_tflops_per_gpu() /
                         safe_best.probe_result().model_tflops_per_gpu() -
                     1),
              Describe(safe_best).c_str());
}

// 8 GPUs, micro-batch sizes 1 and 2: 31 candidates, 9 of them RISKY. The best predicted is
// dp4 tp1 pp2 cp1 mbs1, estimated at 98.3% of capacity, so it runs out of memory wherever its
// true peak is 1.7% above that (0.34 sigma: about a third of seeds); with seed 1 its true peak
// is 81.5 GiB of 79.6. ADAPTIVE probes it first; one probe at a time keeps the order of results,
// and so every decision, independent of timing. Its out-of-memory result marks dp2 tp1 pp2 cp2 mbs2
// (estimated 98.5%, at least as much) as not fitting before it is picked: skipped, and counted in
// the stop reason. The search then ends on a measured best (seed 1: dp1 tp1 pp1 cp8 mbs2) after 7
// probes.
TEST(E2eMemoryTest, ARiskyProbeRunsOutOfMemoryAndCalibratesTheSearch) {
  std::unique_ptr<TestCluster> cluster = StartSimWorker(8);
  ASSERT_NE(cluster, nullptr);

  v1::CreateSearchRequest request = MemorySearch(8, {1, 2}, v1::ADAPTIVE, 1);
  request.mutable_spec()->mutable_adaptive()->set_max_in_flight(1);
  absl::StatusOr<v1::Search> search = cluster->RunSearch(request, kSearchTimeout);
  ASSERT_TRUE(search.ok()) << search.status();
  PrintRanked("ADAPTIVE", *search);
  EXPECT_EQ(search->state(), v1::SUCCEEDED) << search->stop_reason();
  ASSERT_GE(search->candidates_size(), 1);
  const v1::Candidate& best = search->candidates(0);
  EXPECT_EQ(best.probe_result().outcome(), v1::PROBE_OK)
      << best.name() << ": " << best.probe_result().message();

  const auto& failed = search->counts().failed_by_outcome();
  ASSERT_EQ(failed.count("PROBE_OUT_OF_MEMORY"), 1u) << search->stop_reason();
  EXPECT_GE(failed.at("PROBE_OUT_OF_MEMORY"), 1);
  const v1::MemoryCalibrationSummary& calibration = search->memory_calibration();
  EXPECT_GE(calibration.out_of_memory(), 1);
  EXPECT_GT(calibration.smallest_out_of_memory_bytes(), 0);
  EXPECT_GE(calibration.measurements(), 1);

  int64_t risky_out_of_memory = 0;
  int64_t smallest_estimate = 0;
  for (const v1::Candidate& candidate : search->candidates()) {
    const v1::ProbeResult& result = candidate.probe_result();
    if (result.outcome() != v1::PROBE_OUT_OF_MEMORY) continue;
    SCOPED_TRACE(Describe(candidate));
    risky_out_of_memory += candidate.memory().verdict() == v1::RISKY;
    EXPECT_EQ(candidate.state(), v1::CANDIDATE_PROBED);
    EXPECT_EQ(candidate.calibrated_memory().verdict(), v1::OUT_OF_MEMORY);
    EXPECT_GT(result.peak_memory_bytes(), candidate.memory().capacity_bytes());
    if (smallest_estimate == 0 || candidate.memory().peak_bytes() < smallest_estimate) {
      smallest_estimate = candidate.memory().peak_bytes();
    }
  }
  EXPECT_GE(risky_out_of_memory, 1);
  EXPECT_EQ(calibration.smallest_out_of_memory_bytes(), smallest_estimate);

  const v1::Candidate* first = FindCandidate(*search, "dp4 tp1 pp2 cp1 mbs1");
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->probe_result().outcome(), v1::PROBE_OUT_OF_MEMORY) << Describe(*first);
  EXPECT_EQ(FindCandidate(*search, "dp2 tp1 pp2 cp2 mbs2"), nullptr)
      << "estimated above one that ran out of memory, it should have been skipped";
  EXPECT_THAT(search->stop_reason(),
              HasSubstr("; 1 skipped as out of memory by the memory estimate calibrated on "));
  EXPECT_THAT(search->stop_reason(), HasSubstr("RISKY candidates probed, "));
  // The skipped candidate is never picked: the result's event names it.
  absl::StatusOr<std::vector<v1::SearchEvent>> events = cluster->Events(search->name());
  ASSERT_TRUE(events.ok()) << events.status();
  std::vector<std::string> ruled_out;
  for (const v1::SearchEvent& event : *events) {
    if (event.kind() != v1::EVENT_SKIPPED) continue;
    for (const v1::ParallelConfig& config : event.ruled_out()) {
      ruled_out.push_back(DescribeConfig(config));
    }
  }
  EXPECT_THAT(ruled_out, Contains("dp2 tp1 pp2 cp2 mbs2"));
}

}  // namespace
}  // namespace paratune

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (!paratune::SetTestBinaries(argc, argv)) {
    std::fprintf(stderr, "usage: e2e_memory_test PARATUNE_SERVER PARATUNE_WORKER\n");
    return 2;
  }
  return RUN_ALL_TESTS();
}
