// End to end: a real paratune-server and a paratune-worker with the replay backend search
// Llama-3.1-8B on two TSUBAME 4.0 nodes (4 x H100-94GB each), answered from Fujii et al.'s
// measured table (data/measured/llama31_8b_4d_abci_tsubame.csv): measured configurations come
// back with the table's throughput, labelled as replays, the others as not measured.
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

using ::testing::AnyOf;
using ::testing::HasSubstr;

constexpr absl::Duration kSearchTimeout = absl::Seconds(120);

// (tp, cp, pp, micro-batch) -> TFLOP/s per GPU of the table's TSUBAME 4.0 runs at sequence
// 8192 on 8 GPUs (lines 111-127); 0 for its "-" cells.
using Key = std::tuple<int64_t, int64_t, int64_t, int64_t>;
const std::map<Key, double>& TsubameEightGpus() {
  static const std::map<Key, double>* const table = new std::map<Key, double>{
      {{2, 1, 1, 1}, 443.45}, {{2, 1, 1, 2}, 479.16}, {{2, 1, 1, 4}, 0},
      {{2, 2, 1, 1}, 393.96}, {{2, 2, 1, 2}, 418.79}, {{2, 2, 1, 4}, 452.21},
      {{2, 2, 1, 8}, 0},      {{4, 1, 1, 1}, 406.13}, {{4, 1, 1, 2}, 439.61},
      {{4, 1, 1, 4}, 448.51}, {{2, 1, 2, 1}, 413.75}, {{2, 1, 2, 2}, 445.74},
      {{2, 1, 2, 4}, 0},      {{1, 2, 1, 1}, 495.9},  {{1, 2, 1, 2}, 0},
      {{1, 4, 1, 1}, 441.25}, {{1, 4, 1, 2}, 465.92},
  };
  return *table;
}

TEST(E2eReplayTest, MeasuredRunsAreReplayedAndTheRestAreNotMeasured) {
  absl::StatusOr<std::unique_ptr<TestCluster>> cluster =
      TestCluster::Start({{"--backend=replay", "--config=tests/testdata/replay_worker.textproto",
                           "--sim_gpus=4", "--sim_gpu_type=h100-94gb"},
                          {"--backend=replay", "--config=tests/testdata/replay_worker.textproto",
                           "--sim_gpus=4", "--sim_gpu_type=h100-94gb"}});
  ASSERT_TRUE(cluster.ok()) << cluster.status();

  v1::CreateSearchRequest request;
  request.set_display_name("replay backend e2e");
  v1::SearchSpec& spec = *request.mutable_spec();
  spec.mutable_model()->set_preset("llama3.1-8b");
  spec.mutable_training()->set_global_batch_size(1024);
  spec.mutable_training()->set_seq_len(8192);
  spec.mutable_cluster()->mutable_gpu()->set_type("h100-94gb");
  spec.mutable_cluster()->set_num_nodes(2);
  spec.mutable_cluster()->set_gpus_per_node(4);
  for (int64_t mbs : {1, 2, 4}) spec.mutable_space()->add_micro_batch_sizes(mbs);
  spec.mutable_space()->set_include_risky(true);
  spec.set_policy(v1::EXHAUSTIVE);
  spec.mutable_probe()->set_backend("replay");

  absl::StatusOr<v1::Search> search = (*cluster)->RunSearch(request, kSearchTimeout);
  ASSERT_TRUE(search.ok()) << search.status();
  EXPECT_EQ(search->state(), v1::SUCCEEDED) << search->stop_reason();
  std::printf("%s\n", search->stop_reason().c_str());

  int replayed = 0;
  int not_measured = 0;
  for (const v1::Candidate& candidate : search->candidates()) {
    const v1::ParallelConfig& config = candidate.config();
    const v1::ProbeResult& result = candidate.probe_result();
    const std::string name =
        absl::StrCat("dp", config.data_parallel(), " tp", config.tensor_parallel(), " pp",
                     config.pipeline_parallel(), " cp", config.context_parallel(), " mbs",
                     config.micro_batch_size());
    std::printf("%-22s %-20s %8.2f  %s\n", name.c_str(),
                v1::ProbeOutcome_Name(result.outcome()).c_str(), result.model_tflops_per_gpu(),
                result.message().substr(0, 150).c_str());
    EXPECT_EQ(result.backend(), "replay");
    EXPECT_FALSE(result.simulated());
    const auto row =
        TsubameEightGpus().find(Key{config.tensor_parallel(), config.context_parallel(),
                                    config.pipeline_parallel(), config.micro_batch_size()});
    const bool measured =
        row != TsubameEightGpus().end() && row->second > 0 && config.virtual_pipeline() <= 1;
    if (measured) {
      ++replayed;
      EXPECT_EQ(result.outcome(), v1::PROBE_OK) << name << ": " << result.message();
      EXPECT_NEAR(result.model_tflops_per_gpu(), row->second, 1e-6) << name;
      EXPECT_THAT(result.message(), HasSubstr("replay of a measurement, not run here: "
                                              "llama31_8b_4d_abci_tsubame.csv:"));
    } else {
      ++not_measured;
      EXPECT_EQ(result.outcome(), v1::PROBE_NOT_MEASURED) << name << ": " << result.message();
      EXPECT_THAT(result.message(),
                  AnyOf(HasSubstr("not measured: no run of llama3.1-8b"),
                        HasSubstr("reports no result (out of memory, infeasible or failed")));
      EXPECT_TRUE(result.step_times_seconds().empty()) << name;
    }
  }
  EXPECT_GE(replayed, 5);
  EXPECT_GE(not_measured, 1);
  EXPECT_EQ(search->counts().succeeded(), replayed);
  ASSERT_GT(search->candidates_size(), 0);
  // The best replayed measurement ranks first.
  EXPECT_EQ(search->candidates(0).probe_result().outcome(), v1::PROBE_OK);
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
