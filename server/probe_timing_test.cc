#include "server/probe_timing.h"

#include "convert/search_request.h"
#include "estimator/short_probe.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/test_requests.h"

namespace paratune {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

v1::SearchSpec Spec(int64_t global_batch) {
  v1::CreateSearchRequest request = SmallSimSearch(1);
  request.mutable_spec()->mutable_training()->set_global_batch_size(global_batch);
  absl::StatusOr<ValidatedSearchRequest> validated = ValidateCreateSearchRequest(request);
  EXPECT_TRUE(validated.ok()) << validated.status();
  return validated->spec;
}

v1::ParallelConfig Config(int64_t dp, int64_t tp, int64_t pp, int64_t mbs) {
  v1::ParallelConfig config;
  config.set_data_parallel(dp);
  config.set_tensor_parallel(tp);
  config.set_pipeline_parallel(pp);
  config.set_context_parallel(1);
  config.set_micro_batch_size(mbs);
  return config;
}

TEST(ProbeTimingTest, ShortStepsAndADeadlineFromThePrediction) {
  // 1024 / (dp 2 x mbs 1) = 512 micro-batches: short steps of 2 pp and 4 pp.
  absl::StatusOr<ProbeTiming> timing = TimeProbe(Spec(1024), Config(2, 2, 2, 1), 5);
  ASSERT_TRUE(timing.ok()) << timing.status();
  EXPECT_THAT(timing->micro_batch_counts, ElementsAre(4, 8));
  EXPECT_GT(timing->predicted_seconds, 30);
  EXPECT_EQ(timing->deadline_seconds,
            std::max(kMinDeadlineSeconds, kDeadlineFactor * timing->predicted_seconds));
}

TEST(ProbeTimingTest, FullStepsWhenTheGlobalBatchIsSmallAndTheSearchsDeadlineWins) {
  v1::SearchSpec spec = Spec(64);
  spec.mutable_probe()->set_deadline_seconds(45);
  absl::StatusOr<ProbeTiming> timing = TimeProbe(spec, Config(8, 1, 1, 8), 5);
  ASSERT_TRUE(timing.ok()) << timing.status();
  EXPECT_THAT(timing->micro_batch_counts, IsEmpty());
  EXPECT_EQ(timing->deadline_seconds, 45);
}

TEST(ProbeTimingTest, BackendsThatRunFullStepsAreTimedForThem) {
  v1::SearchSpec spec = Spec(1024);
  absl::StatusOr<ProbeTiming> short_steps = TimeProbe(spec, Config(2, 2, 2, 1), 5);
  spec.mutable_probe()->set_backend("command");
  spec.mutable_probe()->set_command_template("megatron");
  absl::StatusOr<ProbeTiming> full_steps = TimeProbe(spec, Config(2, 2, 2, 1), 5);
  ASSERT_TRUE(short_steps.ok() && full_steps.ok());
  EXPECT_THAT(full_steps->micro_batch_counts, IsEmpty());
  // Beyond the start-up, full steps take many times the short ones.
  EXPECT_GT(full_steps->predicted_seconds - kProbeStartupSeconds,
            4 * (short_steps->predicted_seconds - kProbeStartupSeconds));
  EXPECT_GT(full_steps->deadline_seconds, short_steps->deadline_seconds);
}

TEST(ProbeTimingTest, AConfigurationThatDoesNotResolveIsInvalid) {
  EXPECT_EQ(TimeProbe(Spec(1024), Config(3, 1, 1, 1), 5).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace paratune
