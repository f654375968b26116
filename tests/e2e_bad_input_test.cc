// End to end: bad requests get the canonical error code with the field named, and
// cancellation works on a real paratune-server with a real paratune-worker.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/autotuner_service.grpc.pb.h"
#include "tests/test_cluster.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;

constexpr absl::Duration kRpcTimeout = absl::Seconds(30);

class E2eBadInputTest : public ::testing::Test {
 protected:
  // One server for the suite. Its worker's probes take a minute, so a search stays running
  // until the test cancels it.
  static void SetUpTestSuite() {
    absl::StatusOr<std::unique_ptr<TestCluster>> cluster =
        TestCluster::Start({{"--backend=sim", "--sim_gpus=8", "--sim_probe_seconds=60"}});
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = cluster->release();
  }

  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }

  void SetUp() override { ASSERT_NE(cluster_, nullptr); }

  static v1::Autotuner::Stub& autotuner() { return cluster_->autotuner(); }

  // Llama-3.1-8B on 2 nodes x 8 H100-80GB, global batch 256, sequence 4096.
  static v1::CreateSearchRequest ValidSearch() {
    v1::CreateSearchRequest request;
    v1::SearchSpec& spec = *request.mutable_spec();
    spec.mutable_model()->set_preset("llama3.1-8b");
    spec.mutable_training()->set_global_batch_size(256);
    spec.mutable_training()->set_seq_len(4096);
    spec.mutable_cluster()->mutable_gpu()->set_type("h100-80gb");
    spec.mutable_cluster()->set_num_nodes(2);
    spec.mutable_cluster()->set_gpus_per_node(8);
    spec.set_policy(v1::TOP_K);
    spec.set_top_k(2);
    return request;
  }

  static v1::EstimateRequest ValidEstimate() {
    v1::CreateSearchRequest search = ValidSearch();
    v1::EstimateRequest request;
    *request.mutable_model() = search.spec().model();
    *request.mutable_training() = search.spec().training();
    *request.mutable_cluster() = search.spec().cluster();
    v1::ParallelConfig& config = *request.mutable_config();
    config.set_data_parallel(8);
    config.set_tensor_parallel(2);
    config.set_pipeline_parallel(1);
    config.set_context_parallel(1);
    config.set_micro_batch_size(1);
    return request;
  }

  static grpc::Status Create(const v1::CreateSearchRequest& request, v1::Search* search) {
    return autotuner().CreateSearch(ContextWithTimeout(kRpcTimeout).get(), request, search);
  }

  static grpc::Status Estimate(const v1::EstimateRequest& request) {
    v1::EstimateResponse response;
    return autotuner().Estimate(ContextWithTimeout(kRpcTimeout).get(), request, &response);
  }

  static void ExpectInvalidArgument(const grpc::Status& status, const std::string& field) {
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();
    EXPECT_THAT(status.error_message(), HasSubstr(field));
  }

  static TestCluster* cluster_;
};

TestCluster* E2eBadInputTest::cluster_ = nullptr;

TEST_F(E2eBadInputTest, ValidRequestsAreAccepted) {
  v1::EstimateResponse estimate;
  const grpc::Status status =
      autotuner().Estimate(ContextWithTimeout(kRpcTimeout).get(), ValidEstimate(), &estimate);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_GT(estimate.memory().peak_bytes(), 0);
  EXPECT_GT(estimate.performance().model_tflops_per_gpu(), 0);

  v1::PlanRequest plan;
  *plan.mutable_spec() = ValidSearch().spec();
  plan.set_limit(3);
  v1::PlanResponse planned;
  ASSERT_TRUE(autotuner().Plan(ContextWithTimeout(kRpcTimeout).get(), plan, &planned).ok());
  EXPECT_EQ(planned.candidates_size(), 3);
  EXPECT_GT(planned.counts().memory_safe(), 0);
}

TEST_F(E2eBadInputTest, UnknownModelPresetNamesTheField) {
  v1::CreateSearchRequest request = ValidSearch();
  request.mutable_spec()->mutable_model()->set_preset("llama9-1t");
  v1::Search search;
  ExpectInvalidArgument(Create(request, &search), "model.preset");
}

TEST_F(E2eBadInputTest, KvHeadsNotDividingHeadsNamesTheField) {
  v1::CreateSearchRequest request = ValidSearch();
  v1::ModelSpec& model = *request.mutable_spec()->mutable_model();
  model.Clear();
  model.set_hidden_size(4096);
  model.set_ffn_hidden_size(14336);
  model.set_num_layers(32);
  model.set_num_attention_heads(32);
  model.set_num_kv_heads(5);
  model.set_vocab_size(128256);
  v1::Search search;
  ExpectInvalidArgument(Create(request, &search), "model.num_kv_heads");
}

TEST_F(E2eBadInputTest, ZeroNodesNamesTheField) {
  v1::CreateSearchRequest request = ValidSearch();
  request.mutable_spec()->mutable_cluster()->set_num_nodes(0);
  v1::Search search;
  ExpectInvalidArgument(Create(request, &search), "cluster.num_nodes");
}

TEST_F(E2eBadInputTest, ZeroGlobalBatchNamesTheField) {
  v1::CreateSearchRequest request = ValidSearch();
  request.mutable_spec()->mutable_training()->set_global_batch_size(0);
  v1::Search search;
  ExpectInvalidArgument(Create(request, &search), "training.global_batch_size");
}

TEST_F(E2eBadInputTest, ProbeSettingsOutOfRangeNameTheField) {
  v1::CreateSearchRequest request = ValidSearch();
  request.mutable_spec()->mutable_probe()->set_timed_steps(20000);
  v1::Search search;
  const grpc::Status status = Create(request, &search);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message(), "spec.probe.timed_steps (20000) must be in [0, 10000]");
}

TEST_F(E2eBadInputTest, AdaptiveToleranceOutOfRangeNamesTheField) {
  v1::CreateSearchRequest request = ValidSearch();
  request.mutable_spec()->set_policy(v1::ADAPTIVE);
  request.mutable_spec()->mutable_adaptive()->set_tolerance(3);
  v1::Search search;
  const grpc::Status status = Create(request, &search);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("spec.adaptive.tolerance (3)"));
}

TEST_F(E2eBadInputTest, EstimateWithTensorParallelThreeNamesTheField) {
  v1::EstimateRequest request = ValidEstimate();
  request.mutable_config()->set_tensor_parallel(3);
  ExpectInvalidArgument(Estimate(request), "tensor_parallel (3)");
}

TEST_F(E2eBadInputTest, EstimateWithWrongGpuCountNamesTheFields) {
  v1::EstimateRequest request = ValidEstimate();
  request.mutable_config()->set_data_parallel(4);
  const grpc::Status status = Estimate(request);
  ExpectInvalidArgument(status, "config.data_parallel (4)");
  EXPECT_THAT(status.error_message(), HasSubstr("16 GPUs"));
}

TEST_F(E2eBadInputTest, GetUnknownSearchIsNotFound) {
  v1::GetSearchRequest request;
  request.set_name("searches/987654");
  v1::Search search;
  const grpc::Status status =
      autotuner().GetSearch(ContextWithTimeout(kRpcTimeout).get(), request, &search);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(status.error_message(), HasSubstr("searches/987654"));
}

TEST_F(E2eBadInputTest, GarbagePageTokenIsInvalid) {
  v1::ListSearchesRequest request;
  request.set_page_token("not-a-token");
  v1::ListSearchesResponse response;
  ExpectInvalidArgument(
      autotuner().ListSearches(ContextWithTimeout(kRpcTimeout).get(), request, &response),
      "page_token");
}

TEST_F(E2eBadInputTest, CancellingAFinishedSearchIsAFailedPrecondition) {
  // Llama-3.1-405B cannot fit on one 40 GB GPU: the search fails at once, with counts.
  v1::CreateSearchRequest request = ValidSearch();
  request.mutable_spec()->mutable_model()->set_preset("llama3.1-405b");
  request.mutable_spec()->mutable_cluster()->mutable_gpu()->set_type("a100-40gb");
  request.mutable_spec()->mutable_cluster()->set_num_nodes(1);
  request.mutable_spec()->mutable_cluster()->set_gpus_per_node(1);
  v1::Search search;
  ASSERT_TRUE(Create(request, &search).ok());
  EXPECT_EQ(search.state(), v1::FAILED);
  EXPECT_THAT(search.stop_reason(), HasSubstr("no memory-safe configuration"));
  EXPECT_EQ(search.counts().selected(), 0);

  v1::CancelSearchRequest cancel;
  cancel.set_name(search.name());
  v1::Search cancelled;
  const grpc::Status status =
      autotuner().CancelSearch(ContextWithTimeout(kRpcTimeout).get(), cancel, &cancelled);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(status.error_message(), HasSubstr("FAILED"));
}

TEST_F(E2eBadInputTest, CancellingARunningSearchStopsIt) {
  v1::Search search;
  ASSERT_TRUE(Create(ValidSearch(), &search).ok());
  ASSERT_EQ(search.state(), v1::PROBING);

  // Follow the search until the worker holds a probe, then cancel it; the stream must end
  // with the cancelled search.
  std::unique_ptr<grpc::ClientContext> context = ContextWithTimeout(absl::Seconds(60));
  v1::WatchSearchRequest watch;
  watch.set_name(search.name());
  std::unique_ptr<grpc::ClientReader<v1::WatchSearchResponse>> reader =
      autotuner().WatchSearch(context.get(), watch);
  v1::WatchSearchResponse event;
  bool running = false;
  while (!running && reader->Read(&event)) {
    for (const v1::Candidate& candidate : event.search().candidates()) {
      running |= candidate.state() == v1::CANDIDATE_RUNNING;
    }
  }
  ASSERT_TRUE(running) << "no probe was leased";

  v1::CancelSearchRequest cancel;
  cancel.set_name(search.name());
  v1::Search cancelled;
  const grpc::Status status =
      autotuner().CancelSearch(ContextWithTimeout(kRpcTimeout).get(), cancel, &cancelled);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(cancelled.state(), v1::CANCELLED);
  EXPECT_THAT(cancelled.stop_reason(), HasSubstr("cancelled"));
  for (const v1::Candidate& candidate : cancelled.candidates()) {
    EXPECT_EQ(candidate.state(), v1::CANDIDATE_SKIPPED) << candidate.name();
  }

  v1::SearchState last_state = v1::SEARCH_STATE_UNSPECIFIED;
  while (reader->Read(&event)) last_state = event.search().state();
  EXPECT_TRUE(reader->Finish().ok());
  EXPECT_EQ(last_state, v1::CANCELLED);

  // Cancelling twice is a failed precondition.
  EXPECT_EQ(autotuner()
                .CancelSearch(ContextWithTimeout(kRpcTimeout).get(), cancel, &cancelled)
                .error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
}

}  // namespace
}  // namespace paratune

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (!paratune::SetTestBinaries(argc, argv)) {
    std::fprintf(stderr, "usage: e2e_bad_input_test PARATUNE_SERVER PARATUNE_WORKER\n");
    return 2;
  }
  return RUN_ALL_TESTS();
}
