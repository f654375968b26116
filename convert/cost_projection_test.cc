#include "convert/cost_projection.h"

#include "gtest/gtest.h"

namespace paratune {
namespace {

TEST(CostProjectionTest, OptionsComeFromTheSpecWithTheServersDefaultsForUnsetFields) {
  v1::SearchSpec spec;
  SearchCostOptions options = SearchCostOptionsFromSpec(spec);
  EXPECT_EQ(options.steps.warmup_steps, 2);
  EXPECT_EQ(options.steps.timed_steps, 5);
  EXPECT_DOUBLE_EQ(options.steps.startup_seconds, 30);
  EXPECT_EQ(options.top_k, 8);
  EXPECT_DOUBLE_EQ(options.tolerance, 0.02);
  EXPECT_DOUBLE_EQ(options.confidence_sigmas, 2);
  EXPECT_EQ(options.max_in_flight, 2);
  EXPECT_EQ(options.max_confirmations, 2);
  EXPECT_EQ(options.confirmation_steps_factor, 4);
  EXPECT_TRUE(options.steps.short_steps);

  spec.mutable_probe()->set_warmup_steps(1);
  spec.mutable_probe()->set_timed_steps(3);
  spec.set_top_k(4);
  v1::AdaptiveSettings& adaptive = *spec.mutable_adaptive();
  adaptive.set_tolerance(0.05);
  adaptive.set_confidence_sigmas(1.5);
  adaptive.set_max_in_flight(3);
  adaptive.set_max_confirmations(0);
  adaptive.set_confirmation_steps_factor(10);
  options = SearchCostOptionsFromSpec(spec);
  EXPECT_EQ(options.steps.warmup_steps, 1);
  EXPECT_EQ(options.steps.timed_steps, 3);
  EXPECT_EQ(options.top_k, 4);
  EXPECT_DOUBLE_EQ(options.tolerance, 0.05);
  EXPECT_DOUBLE_EQ(options.confidence_sigmas, 1.5);
  EXPECT_EQ(options.max_in_flight, 3);
  EXPECT_EQ(options.max_confirmations, 0);
  EXPECT_EQ(options.confirmation_steps_factor, 10);

  // How each backend runs its probes: ProbeStepsOf (search_request_test.cc).
  spec.mutable_probe()->set_backend("command");
  EXPECT_TRUE(SearchCostOptionsFromSpec(spec).steps.launch_per_count);
  EXPECT_DOUBLE_EQ(SearchCostOptionsFromSpec(spec).steps.startup_seconds, 120);
}

TEST(CostProjectionTest, TheProjectionAsItsApiMessage) {
  SearchCostProjection projection;
  projection.gpus = 64;
  projection.adaptive = {3, 240, 90};
  projection.full_jobs = {41, 73800, 1800};
  projection.best_step_seconds = 137;
  const v1::ProjectedCost proto = ProjectedCostToProto(projection);
  EXPECT_EQ(proto.gpus(), 64);
  EXPECT_EQ(proto.adaptive().runs(), 3);
  EXPECT_EQ(proto.adaptive().total_seconds(), 240);
  EXPECT_EQ(proto.adaptive().longest_seconds(), 90);
  EXPECT_EQ(proto.full_jobs().runs(), 41);
  EXPECT_EQ(proto.best_step_seconds(), 137);
}

}  // namespace
}  // namespace paratune
