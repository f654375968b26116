#include "cli/commands.h"

#include <sstream>

#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// The first row of the Fujii et al. reference values: Llama-3.1-8B, s 8192, t 2, d 2.
v1::EstimateRequest ReferenceRequest() {
  v1::EstimateRequest request;
  request.mutable_model()->set_preset("llama3.1-8b");
  request.mutable_training()->set_global_batch_size(1024);
  request.mutable_training()->set_seq_len(8192);
  request.mutable_cluster()->mutable_gpu()->set_type("h100-94gb");
  request.mutable_cluster()->set_num_nodes(1);
  request.mutable_cluster()->set_gpus_per_node(4);
  v1::ParallelConfig& config = *request.mutable_config();
  config.set_data_parallel(2);
  config.set_tensor_parallel(2);
  config.set_pipeline_parallel(1);
  config.set_context_parallel(1);
  config.set_micro_batch_size(1);
  return request;
}

TEST(RunEstimateTest, PrintsBreakdownVerdictAndPrediction) {
  std::ostringstream out;
  ASSERT_TRUE(RunEstimate(ReferenceRequest(), OutputOptions(), out).ok());
  EXPECT_THAT(out.str(), HasSubstr("Configuration: dp2 tp2 pp1 cp1 mbs1"));
  EXPECT_THAT(out.str(), HasSubstr("optimizer_states"));
  EXPECT_THAT(out.str(), HasSubstr("of capacity -> "));
  EXPECT_THAT(out.str(), HasSubstr("TFLOP/s per GPU"));
}

TEST(RunEstimateTest, JsonIsTheEstimateResponse) {
  std::ostringstream out;
  OutputOptions output;
  output.json = true;
  ASSERT_TRUE(RunEstimate(ReferenceRequest(), output, out).ok());
  v1::EstimateResponse parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(out.str(), &parsed).ok()) << out.str();
  EXPECT_GT(parsed.memory().peak_bytes(), 0);
  EXPECT_GT(parsed.performance().step_time_seconds(), 0);
}

TEST(RunEstimateTest, BadConfigurationNamesTheField) {
  v1::EstimateRequest request = ReferenceRequest();
  request.mutable_config()->set_tensor_parallel(3);
  std::ostringstream out;
  const absl::Status status = RunEstimate(request, OutputOptions(), out);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("tensor_parallel (3)"));
  EXPECT_TRUE(out.str().empty());
}

// Llama-3.1-8B, global batch 1024, s 8192, on 4 nodes of 4 H100-94GB.
v1::SearchSpec SmallPlanSpec() {
  v1::SearchSpec spec;
  spec.mutable_model()->set_preset("llama3.1-8b");
  spec.mutable_training()->set_global_batch_size(1024);
  spec.mutable_training()->set_seq_len(8192);
  spec.mutable_cluster()->mutable_gpu()->set_type("h100-94gb");
  spec.mutable_cluster()->set_num_nodes(4);
  spec.mutable_cluster()->set_gpus_per_node(4);
  return spec;
}

TEST(RunPlanTest, PrintsCountsMemoryMapAndCandidates) {
  v1::PlanRequest request;
  *request.mutable_spec() = SmallPlanSpec();
  request.set_limit(5);
  std::ostringstream out;
  ASSERT_TRUE(RunPlan(request, OutputOptions(), out).ok());
  EXPECT_THAT(out.str(), HasSubstr("llama3.1-8b on 4 nodes x 4 h100-94gb, global batch 1024"));
  EXPECT_THAT(out.str(), HasSubstr("enumerated "));
  EXPECT_THAT(out.str(), HasSubstr("Memory map: "));
  EXPECT_THAT(out.str(), HasSubstr("TFLOP/s/GPU"));
  EXPECT_THAT(out.str(), HasSubstr("(5 of "));
}

TEST(RunPlanTest, ProjectsWhatEachPolicyWouldCost) {
  v1::PlanRequest request;
  *request.mutable_spec() = SmallPlanSpec();
  std::ostringstream out;
  ASSERT_TRUE(RunPlan(request, OutputOptions(), out).ok());
  EXPECT_THAT(out.str(), HasSubstr("Projected cost: probes one after another, each holding all "
                                   "16 GPUs (4 x 4 h100-94gb); a probe\nstarts up in 30 s"));
  EXPECT_THAT(out.str(), HasSubstr("\nADAPTIVE "));
  EXPECT_THAT(out.str(), HasSubstr("\nTOP_K 8 "));
  EXPECT_THAT(out.str(), HasSubstr("\nEXHAUSTIVE "));
  EXPECT_THAT(out.str(), HasSubstr("\none full job per candidate "));
  EXPECT_THAT(out.str(), HasSubstr("of the GPU-hours of one full job per candidate.\n"));

  // The spec's settings shape the projection; one out of range is named.
  request.mutable_spec()->set_top_k(3);
  request.mutable_spec()->mutable_probe()->set_timed_steps(10);
  out.str("");
  ASSERT_TRUE(RunPlan(request, OutputOptions(), out).ok());
  EXPECT_THAT(out.str(), HasSubstr("\nTOP_K 3                          3 "));
  EXPECT_THAT(out.str(), HasSubstr("2 warm-up and 10 timed steps"));
  request.mutable_spec()->mutable_adaptive()->set_tolerance(-1);
  const absl::Status status = RunPlan(request, OutputOptions(), out);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  // Checked as CreateSearch checks the spec, naming the field.
  EXPECT_THAT(status.message(), HasSubstr("spec.adaptive.tolerance (-1) must be in (0, 1]"));
}

TEST(RunDryRunTest, PrintsThePlanAndTheCostOfItsPolicyOnly) {
  v1::CreateSearchRequest request;
  *request.mutable_spec() = SmallPlanSpec();
  request.mutable_spec()->set_policy(v1::TOP_K);
  request.mutable_spec()->set_top_k(4);
  std::ostringstream out;
  ASSERT_TRUE(RunDryRun(request, OutputOptions(), out).ok());
  EXPECT_THAT(out.str(), HasSubstr("dry run, nothing sent to a server: a search with policy "
                                   "TOP_K of\nllama3.1-8b on 4 nodes x 4 h100-94gb"));
  EXPECT_THAT(out.str(), HasSubstr("\nTOP_K 4                          4 "));
  EXPECT_THAT(out.str(), HasSubstr("\nEXHAUSTIVE "));
  EXPECT_THAT(out.str(), HasSubstr("\none full job per candidate "));
  EXPECT_THAT(out.str(), Not(HasSubstr("ADAPTIVE")));

  // Unset, the policy is ADAPTIVE, as on the server.
  request.mutable_spec()->clear_policy();
  out.str("");
  ASSERT_TRUE(RunDryRun(request, OutputOptions(), out).ok());
  EXPECT_THAT(out.str(), HasSubstr("a search with policy ADAPTIVE of"));
  EXPECT_THAT(out.str(), HasSubstr("\nADAPTIVE "));
  EXPECT_THAT(out.str(), Not(HasSubstr("TOP_K")));

  OutputOptions json;
  json.json = true;
  out.str("");
  ASSERT_TRUE(RunDryRun(request, json, out).ok());
  v1::PlanResponse parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(out.str(), &parsed).ok()) << out.str();
  EXPECT_EQ(parsed.candidates_size(), parsed.counts().memory_safe());
}

TEST(RunExplainTest, SaysWhyAConfigurationIsMissing) {
  v1::PlanRequest request;
  *request.mutable_spec() = SmallPlanSpec();
  v1::ParallelConfig config;
  config.set_data_parallel(1);
  config.set_tensor_parallel(16);
  config.set_pipeline_parallel(1);
  config.set_context_parallel(1);
  config.set_micro_batch_size(1);
  std::ostringstream out;
  ASSERT_TRUE(RunExplain(request, config, OutputOptions(), out).ok());
  EXPECT_THAT(out.str(), HasSubstr("rejected by a validity rule"));

  OutputOptions json;
  json.json = true;
  EXPECT_EQ(RunExplain(request, config, json, out).code(), absl::StatusCode::kInvalidArgument);
  config.set_recompute(static_cast<v1::Recompute>(7));
  const absl::Status status = RunExplain(request, config, OutputOptions(), out);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("config.recompute (7)"));
}

}  // namespace
}  // namespace paratune
