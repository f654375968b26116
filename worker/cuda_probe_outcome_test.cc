#include "worker/cuda_probe_outcome.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;
using Ending = SubprocessResult::Ending;

SubprocessResult Ended(Ending ending, int code_or_signal, std::string stderr_tail) {
  SubprocessResult run;
  run.ending = ending;
  if (ending == Ending::kSignaled) {
    run.signal = code_or_signal;
  } else {
    run.exit_code = code_or_signal;
  }
  run.stderr_tail = std::move(stderr_tail);
  run.wall_time = absl::Seconds(3);
  return run;
}

std::string Serialized(v1::ProbeOutcome outcome, const std::string& message) {
  v1::ProbeResult result;
  result.set_outcome(outcome);
  result.set_message(message);
  result.add_step_times_seconds(0.25);
  return result.SerializeAsString();
}

TEST(CudaProbeOutcomeTest, WrittenResultIsTakenAsIsWithTheWallTime) {
  const v1::ProbeResult result = ResultFromProbeRun(
      Ended(Ending::kExited, 0, ""), absl::Seconds(60), Serialized(v1::PROBE_OK, "measured"));
  EXPECT_EQ(result.outcome(), v1::PROBE_OK);
  EXPECT_EQ(result.backend(), "cuda");
  EXPECT_EQ(result.message(), "measured");
  EXPECT_EQ(result.step_times_seconds_size(), 1);
  EXPECT_DOUBLE_EQ(result.wall_seconds(), 3.0);
}

TEST(CudaProbeOutcomeTest, TheProbesOwnOutOfMemoryIsKept) {
  const v1::ProbeResult result =
      ResultFromProbeRun(Ended(Ending::kExited, 0, ""), absl::Seconds(60),
                         Serialized(v1::PROBE_OUT_OF_MEMORY, "cudaMalloc of weights"));
  EXPECT_EQ(result.outcome(), v1::PROBE_OUT_OF_MEMORY);
  EXPECT_EQ(result.message(), "cudaMalloc of weights");
}

TEST(CudaProbeOutcomeTest, TimeoutCarriesTheStderrTail) {
  const v1::ProbeResult result =
      ResultFromProbeRun(Ended(Ending::kTimedOut, 0, "waiting in ncclCommInitRank\n"),
                         absl::Seconds(60), std::nullopt);
  EXPECT_EQ(result.outcome(), v1::PROBE_TIMEOUT);
  EXPECT_THAT(result.message(), HasSubstr("timed out after 1m"));
  EXPECT_THAT(result.message(), HasSubstr("stderr ends: waiting in ncclCommInitRank"));
}

TEST(CudaProbeOutcomeTest, SignalIsACrash) {
  const v1::ProbeResult result = ResultFromProbeRun(
      Ended(Ending::kSignaled, 11, "an illegal memory access"), absl::Seconds(60), std::nullopt);
  EXPECT_EQ(result.outcome(), v1::PROBE_CRASH);
  EXPECT_THAT(result.message(), HasSubstr("killed by signal 11"));
  EXPECT_THAT(result.message(), HasSubstr("an illegal memory access"));
}

TEST(CudaProbeOutcomeTest, ErrorExitsAreCrashes) {
  EXPECT_THAT(
      ResultFromProbeRun(Ended(Ending::kExited, 1, "cannot write"), absl::Seconds(1), std::nullopt)
          .message(),
      HasSubstr("exited with code 1; stderr ends: cannot write"));
  const v1::ProbeResult rejected = ResultFromProbeRun(
      Ended(Ending::kExited, 2, "config.tensor_parallel (3)"), absl::Seconds(1), std::nullopt);
  EXPECT_EQ(rejected.outcome(), v1::PROBE_CRASH);
  EXPECT_THAT(rejected.message(), HasSubstr("same build"));
}

TEST(CudaProbeOutcomeTest, MissingOrGarbledResultIsACrash) {
  const v1::ProbeResult missing =
      ResultFromProbeRun(Ended(Ending::kExited, 0, ""), absl::Seconds(1), std::nullopt);
  EXPECT_EQ(missing.outcome(), v1::PROBE_CRASH);
  EXPECT_THAT(missing.message(), HasSubstr("no result file"));
  EXPECT_THAT(missing.message(), HasSubstr("stderr was empty"));
  const v1::ProbeResult garbled =
      ResultFromProbeRun(Ended(Ending::kExited, 0, ""), absl::Seconds(1), std::string("\xff\xff"));
  EXPECT_EQ(garbled.outcome(), v1::PROBE_CRASH);
  EXPECT_THAT(garbled.message(), HasSubstr("not a ProbeResult"));
  // A parseable message without an outcome is not a result either.
  const v1::ProbeResult empty =
      ResultFromProbeRun(Ended(Ending::kExited, 0, ""), absl::Seconds(1), std::string());
  EXPECT_EQ(empty.outcome(), v1::PROBE_CRASH);
}

}  // namespace
}  // namespace paratune
