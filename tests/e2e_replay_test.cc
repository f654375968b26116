// End to end: a real paratune-server and a paratune-worker with the replay backend search
// Llama-3.1-8B on two TSUBAME 4.0 nodes (4 x H100-94GB each), answered from Fujii et al.'s
// measured table (data/measured/llama31_8b_4d_abci_tsubame.csv): measured configurations come
// back with the table's throughput, labelled as replays, the table's failed ("-") cells as
// crashes with their modelled cost, the others as not measured.
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/autotuner_service.grpc.pb.h"
#include "tests/test_cluster.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;

constexpr absl::Duration kSearchTimeout = absl::Seconds(120);

// (tp, cp, pp, micro-batch) -> TFLOP/s per GPU of the table's TSUBAME 4.0 runs at sequence
// 8192; 0 for its "-" cells (the source's run failed without a result).
using Key = std::tuple<int64_t, int64_t, int64_t, int64_t>;
using Runs = std::map<Key, double>;

// On 8 GPUs (lines 111-207).
const Runs& TsubameEightGpus() {
  static const Runs* const table = new Runs{
      {{2, 1, 1, 1}, 443.45}, {{2, 1, 1, 2}, 479.16}, {{2, 1, 1, 4}, 0},
      {{2, 2, 1, 1}, 393.96}, {{2, 2, 1, 2}, 418.79}, {{2, 2, 1, 4}, 452.21},
      {{2, 2, 1, 8}, 0},      {{4, 1, 1, 1}, 406.13}, {{4, 1, 1, 2}, 439.61},
      {{4, 1, 1, 4}, 448.51}, {{2, 1, 2, 1}, 413.75}, {{2, 1, 2, 2}, 445.74},
      {{2, 1, 2, 4}, 0},      {{1, 2, 1, 1}, 495.9},  {{1, 2, 1, 2}, 0},
      {{1, 4, 1, 1}, 441.25}, {{1, 4, 1, 2}, 465.92},
  };
  return *table;
}

// On 4 GPUs, one node (lines 110-206).
const Runs& TsubameFourGpus() {
  static const Runs* const table = new Runs{
      {{2, 1, 1, 1}, 446.72}, {{2, 1, 1, 2}, 0}, {{2, 1, 1, 4}, 0},      {{2, 2, 1, 1}, 396.83},
      {{2, 2, 1, 2}, 421.59}, {{2, 2, 1, 4}, 0}, {{2, 2, 1, 8}, 0},      {{4, 1, 1, 1}, 408.29},
      {{4, 1, 1, 2}, 443.83}, {{4, 1, 1, 4}, 0}, {{2, 1, 2, 1}, 415.39}, {{2, 1, 2, 2}, 449.1},
      {{2, 1, 2, 4}, 0},      {{1, 2, 1, 1}, 0}, {{1, 2, 1, 2}, 0},      {{1, 4, 1, 1}, 449.58},
      {{1, 4, 1, 2}, 0},
  };
  return *table;
}

absl::StatusOr<std::unique_ptr<TestCluster>> TwoTsubameNodes() {
  return TestCluster::Start({{"--backend=replay", "--config=tests/testdata/replay_worker.textproto",
                              "--sim_gpus=4", "--sim_gpu_type=h100-94gb"},
                             {"--backend=replay", "--config=tests/testdata/replay_worker.textproto",
                              "--sim_gpus=4", "--sim_gpu_type=h100-94gb"}});
}

// EXHAUSTIVE over SAFE and RISKY candidates of Llama-3.1-8B at sequence 8192 on `nodes` x 4
// H100-94GB, micro-batches 1, 2 and 4.
v1::CreateSearchRequest TsubameSearch(int64_t nodes) {
  v1::CreateSearchRequest request;
  request.set_display_name("replay backend e2e");
  v1::SearchSpec& spec = *request.mutable_spec();
  spec.mutable_model()->set_preset("llama3.1-8b");
  spec.mutable_training()->set_global_batch_size(1024);
  spec.mutable_training()->set_seq_len(8192);
  spec.mutable_cluster()->mutable_gpu()->set_type("h100-94gb");
  spec.mutable_cluster()->set_num_nodes(nodes);
  spec.mutable_cluster()->set_gpus_per_node(4);
  for (int64_t mbs : {1, 2, 4}) spec.mutable_space()->add_micro_batch_sizes(mbs);
  spec.mutable_space()->set_memory_policy(v1::MEASURE_RISKY);
  spec.set_policy(v1::EXHAUSTIVE);
  spec.mutable_probe()->set_backend("replay");
  return request;
}

struct Tally {
  int replayed = 0;
  int failed = 0;
  int not_measured = 0;
};

// Checks every probed candidate of `search` against `runs`: measured runs replayed with the
// table's throughput, its failed ones CRASH, the rest NOT_MEASURED, each labelled.
Tally CheckAgainstTable(const v1::Search& search, const Runs& runs) {
  EXPECT_EQ(search.state(), v1::SUCCEEDED) << search.stop_reason();
  std::printf("%s\n", search.stop_reason().c_str());
  Tally tally;
  for (const v1::Candidate& candidate : search.candidates()) {
    const v1::ParallelConfig& config = candidate.config();
    const v1::ProbeResult& result = candidate.probe_result();
    const std::string name =
        absl::StrCat("dp", config.data_parallel(), " tp", config.tensor_parallel(), " pp",
                     config.pipeline_parallel(), " cp", config.context_parallel(), " mbs",
                     config.micro_batch_size());
    std::printf("%-22s %-20s %8.2f %8.1f s  %s\n", name.c_str(),
                v1::ProbeOutcome_Name(result.outcome()).c_str(), result.model_tflops_per_gpu(),
                result.wall_seconds(), result.message().substr(0, 150).c_str());
    EXPECT_EQ(result.backend(), "replay");
    EXPECT_FALSE(result.simulated());
    const auto row = runs.find(Key{config.tensor_parallel(), config.context_parallel(),
                                   config.pipeline_parallel(), config.micro_batch_size()});
    const bool measured = row != runs.end() && config.virtual_pipeline() <= 1;
    if (measured && row->second > 0) {
      ++tally.replayed;
      EXPECT_EQ(result.outcome(), v1::PROBE_OK) << name << ": " << result.message();
      EXPECT_NEAR(result.model_tflops_per_gpu(), row->second, 1e-6) << name;
      EXPECT_THAT(result.message(), HasSubstr("replay of a measurement, not run here: "
                                              "llama31_8b_4d_abci_tsubame.csv:"));
      EXPECT_GT(result.wall_seconds(), 0) << name;
    } else if (measured) {
      // A "-" cell: the source's run failed, which costs start-up and a first step.
      ++tally.failed;
      EXPECT_EQ(result.outcome(), v1::PROBE_CRASH) << name << ": " << result.message();
      EXPECT_THAT(result.message(), HasSubstr("the source's run failed without a result"));
      EXPECT_TRUE(result.step_times_seconds().empty()) << name;
      EXPECT_GT(result.wall_seconds(), 0) << name;
    } else {
      ++tally.not_measured;
      EXPECT_EQ(result.outcome(), v1::PROBE_NOT_MEASURED) << name << ": " << result.message();
      EXPECT_THAT(result.message(), HasSubstr("not measured: no run of llama3.1-8b"));
      EXPECT_TRUE(result.step_times_seconds().empty()) << name;
    }
    EXPECT_THAT(result.message(), HasSubstr("is modelled, not measured")) << name;
  }
  EXPECT_EQ(search.counts().succeeded(), tally.replayed);
  const auto crashed = search.counts().failed_by_outcome().find("PROBE_CRASH");
  EXPECT_EQ(crashed == search.counts().failed_by_outcome().end() ? 0 : crashed->second,
            tally.failed);
  if (search.candidates_size() > 0) {
    // The best replayed measurement ranks first.
    EXPECT_EQ(search.candidates(0).probe_result().outcome(), v1::PROBE_OK);
  }
  return tally;
}

TEST(E2eReplayTest, MeasuredRunsAreReplayedAndTheRestAreNotMeasured) {
  absl::StatusOr<std::unique_ptr<TestCluster>> cluster = TwoTsubameNodes();
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  absl::StatusOr<v1::Search> search = (*cluster)->RunSearch(TsubameSearch(2), kSearchTimeout);
  ASSERT_TRUE(search.ok()) << search.status();
  const Tally tally = CheckAgainstTable(*search, TsubameEightGpus());
  EXPECT_GE(tally.replayed, 5);
  EXPECT_GE(tally.not_measured, 1);
}

TEST(E2eReplayTest, TheTablesFailedRunsFailAsCrashes) {
  absl::StatusOr<std::unique_ptr<TestCluster>> cluster = TwoTsubameNodes();
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  absl::StatusOr<v1::Search> search = (*cluster)->RunSearch(TsubameSearch(1), kSearchTimeout);
  ASSERT_TRUE(search.ok()) << search.status();
  const Tally tally = CheckAgainstTable(*search, TsubameFourGpus());
  EXPECT_GE(tally.replayed, 5);
  // Among SAFE and RISKY candidates, e.g. tp4 mbs4 (line 164, estimated at 87% of memory).
  EXPECT_GE(tally.failed, 1);
}

}  // namespace
}  // namespace paratune

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (!paratune::SetTestBinaries(argc, argv)) {
    std::fprintf(stderr, "usage: e2e_replay_test PARATUNE_SERVER PARATUNE_WORKER\n");
    return 2;
  }
  return RUN_ALL_TESTS();
}
