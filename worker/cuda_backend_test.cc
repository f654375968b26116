#include "worker/cuda_backend.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "worker/backend_conformance.h"
#include "worker/probe/probe_spec.h"
#include "worker/probe/test_assignments.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;

// The fake probe built beside this test (worker/fake_probe.cc).
std::string FakeProbe() {
  return absl::StrCat(std::getenv("TEST_SRCDIR"), "/paratune/worker/fake_probe");
}

std::string TestDirectory() {
  const ::testing::TestInfo* test = testing::UnitTest::GetInstance()->current_test_info();
  std::string name = absl::StrCat(test->test_suite_name(), ".", test->name());
  std::replace(name.begin(), name.end(), '/', '_');
  const std::string directory = absl::StrCat(std::getenv("TEST_TMPDIR"), "/", name);
  std::filesystem::create_directories(directory);
  return directory;
}

CudaBackend::Options FakeProbeOptions(const std::string& behavior) {
  CudaBackend::Options options;
  options.probe_binary = FakeProbe();
  options.scratch_directory = TestDirectory();
  options.environment["FAKE_PROBE_BEHAVIOR"] = behavior;
  return options;
}

CudaBackend Backend(const std::string& behavior) { return CudaBackend(FakeProbeOptions(behavior)); }

// The backend's side of the process boundary, with the fake probe answering as the real one
// would: the files, the process, the report and how the worker labels it; the suite's small
// probe as one data-parallel replica on one GPU.
INSTANTIATE_TEST_SUITE_P(CudaCpuSide, BackendConformanceTest,
                         ::testing::Values(BackendConformanceParam{
                             "cuda_with_fake_probe",
                             [] { return std::make_unique<CudaBackend>(FakeProbeOptions("ok")); },
                             AsReplicaProbe(SmallConformanceAssignment())}),
                         BackendConformanceParamName);

ProbeSpec OneGpu() { return SpecOf(TestAssignment("llama3.2-1b", 8, 2048, 1, 1, 1, 1, 1)); }

// Member `index` of a gang of two workers, each with one of the two data-parallel ranks.
ProbeSpec GangMemberSpec(int64_t index) {
  return SpecOf(AsGangMember(TestAssignment("llama3.2-1b", 8, 2048, 2, 1, 1, 1, 1), 2, index));
}

absl::StatusOr<ProbeRun> RunAlone(CudaBackend& backend, const ProbeSpec& spec) {
  SoloProbeContext context;
  return backend.Run(spec, context);
}

// A gang member's context whose rendezvous hands out `token`, records what it was given and
// creates `go_file` (which the fake gang[0] probe waits for).
class GangContext : public ProbeContext {
 public:
  explicit GangContext(absl::StatusOr<std::string> token, std::string go_file = "")
      : token_(std::move(token)), go_file_(std::move(go_file)) {}
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
  const absl::StatusOr<std::string> token_;
  const std::string go_file_;
  absl::Mutex mu_;
  std::string given_ ABSL_GUARDED_BY(mu_) = "(never called)";
};

TEST(CudaBackendTest, AnOkRunIsTheProbesReportAndTheScratchDirectoryIsRemoved) {
  CudaBackend backend = Backend("ok");
  absl::StatusOr<ProbeRun> run = RunAlone(backend, OneGpu());
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->outcome, v1::PROBE_OK) << run->detail;
  EXPECT_EQ(run->source, FigureSource::kMeasured);
  // 8 micro-batches per step, 10 ms each in the fake probe.
  ASSERT_EQ(run->timed_steps.size(), 1u);
  EXPECT_EQ(run->timed_steps[0].micro_batches, 8);
  EXPECT_THAT(run->timed_steps[0].step_times_seconds, ::testing::Each(0.08));
  EXPECT_EQ(run->peak_memory, Provenance::kMeasured);
  EXPECT_EQ(run->detail, "paratune-probe on 1 x fake GPU");
  ASSERT_TRUE(run->measurements.has_value());
  EXPECT_EQ(run->measurements->gpu_name(), "fake GPU");
  EXPECT_TRUE(std::filesystem::is_empty(TestDirectory()));
}

TEST(CudaBackendTest, OutOfMemoryIsReported) {
  CudaBackend backend = Backend("oom");
  absl::StatusOr<ProbeRun> run = RunAlone(backend, OneGpu());
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->outcome, v1::PROBE_OUT_OF_MEMORY);
  EXPECT_EQ(run->detail, "cudaMalloc of weights (9.00 GiB) failed");
}

TEST(CudaBackendTest, CrashCarriesTheSignalAndStderr) {
  CudaBackend backend = Backend("crash");
  absl::StatusOr<ProbeRun> run = RunAlone(backend, OneGpu());
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->outcome, v1::PROBE_CRASH);
  EXPECT_THAT(run->detail, HasSubstr("killed by signal 6"));
  EXPECT_THAT(run->detail, HasSubstr("an illegal memory access was encountered"));
}

TEST(CudaBackendTest, ErrorExitAndMissingOrGarbledReportsAreCrashes) {
  for (const char* behavior : {"exit1", "garbage", "silent"}) {
    CudaBackend backend = Backend(behavior);
    absl::StatusOr<ProbeRun> run = RunAlone(backend, OneGpu());
    ASSERT_TRUE(run.ok()) << behavior << ": " << run.status();
    EXPECT_EQ(run->outcome, v1::PROBE_CRASH) << behavior;
  }
}

TEST(CudaBackendTest, AProbeToldToStopIsKilledAndSaysWhatItPrinted) {
  // The probe tells the test it runs through a named pipe, then ignores SIGTERM.
  const std::string started = absl::StrCat(TestDirectory(), "/started");
  ASSERT_EQ(mkfifo(started.c_str(), 0600), 0);
  CudaBackend::Options options = FakeProbeOptions("hang");
  options.environment["FAKE_PROBE_STARTED"] = started;
  options.kill_grace = absl::Milliseconds(100);
  CudaBackend backend(options);
  const ProbeSpec spec = OneGpu();
  SoloProbeContext context;
  absl::StatusOr<ProbeRun> run;
  std::thread runner([&] { run = backend.Run(spec, context); });
  std::ifstream pipe(started);
  std::string line;
  std::getline(pipe, line);
  EXPECT_EQ(line, "started");
  context.Stop();
  runner.join();
  EXPECT_EQ(run.status().code(), absl::StatusCode::kCancelled) << run.status();
  EXPECT_THAT(run.status().message(), HasSubstr("paratune-probe was stopped after "));
  EXPECT_EQ(backend.StopGrace(spec), absl::Milliseconds(100));
}

TEST(CudaBackendTest, WhatTheProbeCannotRunIsRefusedBeforeAnyProcess) {
  CudaBackend::Options options;
  options.probe_binary = "/nonexistent/paratune-probe";
  options.scratch_directory = "/nonexistent";
  CudaBackend backend(options);
  // A 2056-token sequence over context parallel 2: 1028 tokens per rank, which cuBLASLt's fp8
  // GEMMs cannot take.
  v1::ProbeAssignment assignment = TestAssignment("llama3.2-1b", 16, 2056, 2, 1, 1, 2, 1);
  assignment.mutable_training()->set_precision(v1::FP8);
  absl::StatusOr<ProbeRun> run = RunAlone(backend, SpecOf(assignment));
  EXPECT_EQ(run.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(run.status().message(), HasSubstr("(1028) must be a multiple of 16"));
}

TEST(CudaBackendTest, MissingProbeBinaryIsUnavailable) {
  CudaBackend::Options options;
  options.probe_binary = "/nonexistent/paratune-probe";
  options.scratch_directory = TestDirectory();
  CudaBackend backend(options);
  absl::StatusOr<ProbeRun> run = RunAlone(backend, OneGpu());
  EXPECT_EQ(run.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(run.status().message(), HasSubstr("/nonexistent/paratune-probe"));
}

TEST(CudaBackendTest, GangMemberPassesGangZerosIdToItsProbe) {
  CudaBackend::Options options = FakeProbeOptions("ok");
  options.environment["FAKE_PROBE_NCCL_ID"] = "0a1b";
  CudaBackend backend(options);
  GangContext context(std::string("0a1b"));
  const ProbeSpec spec = GangMemberSpec(1);
  absl::StatusOr<ProbeRun> run = backend.Run(spec, context);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->outcome, v1::PROBE_OK) << run->detail;
  EXPECT_EQ(context.given(), "");
}

TEST(CudaBackendTest, GangZeroPublishesTheIdItsProbeWrote) {
  const std::string go_file = std::string(std::getenv("TEST_TMPDIR")) + "/go";
  CudaBackend::Options options = FakeProbeOptions("gang0");
  options.environment["FAKE_PROBE_GO_FILE"] = go_file;
  CudaBackend backend(options);
  GangContext context(absl::InternalError("gang[0] never waits for a token"), go_file);
  const ProbeSpec spec = GangMemberSpec(0);
  absl::StatusOr<ProbeRun> run = backend.Run(spec, context);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->outcome, v1::PROBE_OK) << run->detail;
  EXPECT_EQ(context.given(), "00ff");
}

TEST(CudaBackendTest, FailedRendezvousStopsTheProbe) {
  CudaBackend backend = Backend("ok");
  GangContext context(absl::FailedPreconditionError("probe no longer leased"));
  const ProbeSpec spec = GangMemberSpec(1);
  EXPECT_EQ(backend.Run(spec, context).status().code(), absl::StatusCode::kFailedPrecondition);
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
