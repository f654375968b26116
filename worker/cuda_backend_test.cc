#include "worker/cuda_backend.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "worker/probe/test_assignments.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;

// The fake probe built beside this test (worker/fake_probe.cc).
std::string FakeProbe() {
  return absl::StrCat(std::getenv("TEST_SRCDIR"), "/paratune/worker/fake_probe");
}

std::string TestDirectory() {
  const std::string directory =
      absl::StrCat(std::getenv("TEST_TMPDIR"), "/",
                   testing::UnitTest::GetInstance()->current_test_info()->name());
  std::filesystem::create_directories(directory);
  return directory;
}

CudaBackend Backend(const std::string& behavior, absl::Duration kill_grace = absl::Seconds(5),
                    const std::string& go_file = "") {
  CudaBackend::Options options;
  options.probe_binary = FakeProbe();
  options.scratch_directory = TestDirectory();
  options.environment["FAKE_PROBE_BEHAVIOR"] = behavior;
  if (!go_file.empty()) options.environment["FAKE_PROBE_GO_FILE"] = go_file;
  options.kill_grace = kill_grace;
  return CudaBackend(options);
}

v1::ProbeAssignment OneGpu() { return TestAssignment("llama3.2-1b", 8, 2048, 1, 1, 1, 1, 1); }

// A gang member's context whose rendezvous hands out `token`, records what it was given and
// creates `go_file` (which the fake gang[0] probe waits for).
class GangContext : public ProbeContext {
 public:
  explicit GangContext(absl::StatusOr<std::string> token, std::string go_file = "")
      : token_(std::move(token)), go_file_(std::move(go_file)) {}
  const absl::Notification& cancelled() const override { return cancelled_; }
  absl::StatusOr<std::string> Rendezvous(const std::string& token) override {
    {
      absl::MutexLock lock(&mu_);
      given_ = token;
    }
    if (!go_file_.empty()) std::ofstream(go_file_) << "go";
    return token.empty() ? token_ : absl::StatusOr<std::string>(token);
  }
  std::string given() {
    absl::MutexLock lock(&mu_);
    return given_;
  }

 private:
  absl::Notification cancelled_;
  const absl::StatusOr<std::string> token_;
  const std::string go_file_;
  absl::Mutex mu_;
  std::string given_ ABSL_GUARDED_BY(mu_) = "(never called)";
};

TEST(CudaBackendTest, OkResultIsTheProbesAndTheScratchDirectoryIsRemoved) {
  CudaBackend backend = Backend("ok");
  SoloProbeContext context;
  absl::StatusOr<v1::ProbeResult> result = backend.Run(OneGpu(), context);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->outcome(), v1::PROBE_OK);
  EXPECT_EQ(result->backend(), "cuda");
  EXPECT_EQ(result->step_times_seconds_size(), 2);
  EXPECT_GT(result->wall_seconds(), 0);
  EXPECT_THAT(result->message(), HasSubstr("assignment.pb"));
  EXPECT_TRUE(std::filesystem::is_empty(TestDirectory()));
}

TEST(CudaBackendTest, OutOfMemoryIsReported) {
  CudaBackend backend = Backend("oom");
  SoloProbeContext context;
  absl::StatusOr<v1::ProbeResult> result = backend.Run(OneGpu(), context);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->outcome(), v1::PROBE_OUT_OF_MEMORY);
}

TEST(CudaBackendTest, CrashCarriesTheSignalAndStderr) {
  CudaBackend backend = Backend("crash");
  SoloProbeContext context;
  absl::StatusOr<v1::ProbeResult> result = backend.Run(OneGpu(), context);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->outcome(), v1::PROBE_CRASH);
  EXPECT_THAT(result->message(), HasSubstr("killed by signal 6"));
  EXPECT_THAT(result->message(), HasSubstr("an illegal memory access was encountered"));
}

TEST(CudaBackendTest, ErrorExitAndMissingOrGarbledResultsAreCrashes) {
  for (const char* behavior : {"exit1", "garbage", "silent"}) {
    CudaBackend backend = Backend(behavior);
    SoloProbeContext context;
    absl::StatusOr<v1::ProbeResult> result = backend.Run(OneGpu(), context);
    ASSERT_TRUE(result.ok()) << behavior << ": " << result.status();
    EXPECT_EQ(result->outcome(), v1::PROBE_CRASH) << behavior;
  }
}

TEST(CudaBackendTest, HangIsKilledAtTheDeadline) {
  CudaBackend backend = Backend("hang", absl::Milliseconds(100));
  v1::ProbeAssignment assignment = OneGpu();
  assignment.set_deadline_seconds(0.5);
  SoloProbeContext context;
  absl::StatusOr<v1::ProbeResult> result = backend.Run(assignment, context);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->outcome(), v1::PROBE_TIMEOUT);
  EXPECT_THAT(result->message(), HasSubstr("timed out after 500ms"));
}

TEST(CudaBackendTest, CancellationStopsARunningProbe) {
  CudaBackend backend = Backend("hang", absl::Milliseconds(100));
  SoloProbeContext context;
  absl::StatusOr<v1::ProbeResult> result;
  std::thread runner([&] { result = backend.Run(OneGpu(), context); });
  context.Cancel();
  runner.join();
  EXPECT_EQ(result.status().code(), absl::StatusCode::kCancelled) << result.status();
}

TEST(CudaBackendTest, InvalidAssignmentIsRejectedBeforeAnyProcess) {
  CudaBackend::Options options;
  options.probe_binary = "/nonexistent/paratune-probe";
  options.scratch_directory = "/nonexistent";
  CudaBackend backend(options);
  v1::ProbeAssignment assignment = OneGpu();
  assignment.mutable_config()->set_tensor_parallel(3);
  SoloProbeContext context;
  absl::StatusOr<v1::ProbeResult> result = backend.Run(assignment, context);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(result.status().message(), HasSubstr("tensor_parallel (3)"));
}

TEST(CudaBackendTest, MissingProbeBinaryIsUnavailable) {
  CudaBackend::Options options;
  options.probe_binary = "/nonexistent/paratune-probe";
  options.scratch_directory = TestDirectory();
  CudaBackend backend(options);
  SoloProbeContext context;
  absl::StatusOr<v1::ProbeResult> result = backend.Run(OneGpu(), context);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(result.status().message(), HasSubstr("/nonexistent/paratune-probe"));
}

TEST(CudaBackendTest, GangMemberPassesGangZerosIdToItsProbe) {
  CudaBackend backend = Backend("ok");
  GangContext context(std::string("0a1b"));
  const v1::ProbeAssignment assignment =
      AsGangMember(TestAssignment("llama3.2-1b", 8, 2048, 2, 1, 1, 1, 1), 2, 1);
  absl::StatusOr<v1::ProbeResult> result = backend.Run(assignment, context);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(context.given(), "");
  EXPECT_THAT(result->message(), HasSubstr("nccl_id 0a1b"));
}

TEST(CudaBackendTest, GangZeroPublishesTheIdItsProbeWrote) {
  const std::string go_file = std::string(std::getenv("TEST_TMPDIR")) + "/go";
  CudaBackend backend = Backend("gang0", absl::Seconds(5), go_file);
  GangContext context(absl::InternalError("gang[0] never waits for a token"), go_file);
  const v1::ProbeAssignment assignment =
      AsGangMember(TestAssignment("llama3.2-1b", 8, 2048, 2, 1, 1, 1, 1), 2, 0);
  absl::StatusOr<v1::ProbeResult> result = backend.Run(assignment, context);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->outcome(), v1::PROBE_OK);
  EXPECT_EQ(context.given(), "00ff");
}

TEST(CudaBackendTest, FailedRendezvousStopsTheProbe) {
  CudaBackend backend = Backend("ok");
  GangContext context(absl::FailedPreconditionError("probe no longer leased"));
  const v1::ProbeAssignment assignment =
      AsGangMember(TestAssignment("llama3.2-1b", 8, 2048, 2, 1, 1, 1, 1), 2, 1);
  absl::StatusOr<v1::ProbeResult> result = backend.Run(assignment, context);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(ListProbeGpusTest, ListsWhatTheProbePrints) {
  setenv("FAKE_PROBE_BEHAVIOR", "ok", 1);
  absl::StatusOr<std::vector<v1::Gpu>> gpus = ListProbeGpus(FakeProbe(), absl::Seconds(30));
  ASSERT_TRUE(gpus.ok()) << gpus.status();
  ASSERT_EQ(gpus->size(), 2u);
  EXPECT_EQ((*gpus)[0].index(), 0);
  EXPECT_EQ((*gpus)[1].index(), 1);
  EXPECT_EQ((*gpus)[1].name(), "NVIDIA H100 80GB HBM3");
}

TEST(ListProbeGpusTest, NoGpuIsUnavailableWithTheProbesReason) {
  setenv("FAKE_PROBE_BEHAVIOR", "no_gpus", 1);
  absl::StatusOr<std::vector<v1::Gpu>> gpus = ListProbeGpus(FakeProbe(), absl::Seconds(30));
  EXPECT_EQ(gpus.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(gpus.status().message(), HasSubstr("driver version is insufficient"));
  unsetenv("FAKE_PROBE_BEHAVIOR");
}

TEST(ListProbeGpusTest, MissingBinaryIsNotFound) {
  EXPECT_EQ(ListProbeGpus("/nonexistent/paratune-probe", absl::Seconds(30)).status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace paratune
