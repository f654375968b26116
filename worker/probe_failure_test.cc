#include "worker/probe_failure.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;

TEST(ResultFromBackendErrorTest, InfrastructureProblemsAreRetriable) {
  for (const absl::Status& error :
       {absl::UnavailableError("driver"), absl::ResourceExhaustedError("busy"),
        absl::AbortedError("x"), absl::DeadlineExceededError("x"), absl::CancelledError("x")}) {
    EXPECT_EQ(ResultFromBackendError("sim", error).outcome(), v1::PROBE_INFRA_ERROR) << error;
  }
}

TEST(ResultFromBackendErrorTest, EverythingElseIsACrash) {
  const v1::ProbeResult result =
      ResultFromBackendError("cuda", absl::InvalidArgumentError("config.tensor_parallel (3)"));
  EXPECT_EQ(result.outcome(), v1::PROBE_CRASH);
  EXPECT_EQ(result.backend(), "cuda");
  EXPECT_THAT(result.message(), HasSubstr("backend cuda failed"));
  EXPECT_THAT(result.message(), HasSubstr("config.tensor_parallel (3)"));
  EXPECT_EQ(ResultFromBackendError("sim", absl::InternalError("threw")).outcome(), v1::PROBE_CRASH);
}

TEST(ResultAtDeadlineTest, IsATimeoutQuotingWhatTheBackendSaid) {
  const v1::ProbeResult result = ResultAtDeadline(
      "command", 3, absl::Seconds(1),
      absl::CancelledError("the run was stopped, after logging 2 of 4 step times"));
  EXPECT_EQ(result.outcome(), v1::PROBE_TIMEOUT);
  EXPECT_EQ(result.backend(), "command");
  EXPECT_EQ(result.message(),
            "the probe did not finish within its deadline of 3 s and was stopped 1s before it: "
            "the run was stopped, after logging 2 of 4 step times");
  EXPECT_EQ(ResultAtDeadline("sim", 60, absl::ZeroDuration(), absl::OkStatus()).message(),
            "the probe did not finish within its deadline of 60 s and was stopped");
}

TEST(ResultRefusedByServerTest, IsACrashQuotingTheRefusal) {
  const v1::ProbeResult result = ResultRefusedByServer(
      "sim",
      absl::InvalidArgumentError("result.mean_step_time_seconds (nan) must be in [0, 1e+06]"),
      12.5);
  EXPECT_EQ(result.outcome(), v1::PROBE_CRASH);
  EXPECT_EQ(result.backend(), "sim");
  EXPECT_EQ(result.message(),
            "the server refused the result: result.mean_step_time_seconds (nan) must be in [0, "
            "1e+06]");
  EXPECT_EQ(result.wall_seconds(), 12.5);
  EXPECT_EQ(result.step_times_seconds_size(), 0);
}

}  // namespace
}  // namespace paratune
