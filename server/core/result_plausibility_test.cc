#include "server/core/result_plausibility.h"

#include <cstdint>
#include <functional>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/core/test_probe_result.h"
#include "server/core/test_requests.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;

// The H100-80GB sim worker of test_requests.h, as registered.
v1::Worker RegisteredWorker() {
  v1::Worker worker;
  worker.set_name("workers/3");
  *worker.mutable_gpus() = Worker(8).gpus();
  return worker;
}

ResultLimits Limits(const v1::SearchSpec& spec) {
  absl::StatusOr<ResultLimits> limits = ResultLimitsOf(spec, RegisteredWorker());
  EXPECT_TRUE(limits.ok()) << limits.status();
  return limits.ok() ? *limits : ResultLimits();
}

// A sim result of the small search's lease, every figure within its limits.
v1::ProbeResult SimResult() {
  v1::ProbeResult result = CompleteProbeResult();
  result.set_backend("sim");
  result.set_simulated(true);
  return result;
}

TEST(ResultLimitsOfTest, TakesTheBackendThePeakOfThePrecisionAndTheWorkersMemory) {
  v1::SearchSpec spec = SmallSimSearch(1).spec();
  ResultLimits limits = Limits(spec);
  EXPECT_EQ(limits.backend, "sim");
  EXPECT_EQ(limits.peak_tflops_per_gpu, 989);
  EXPECT_EQ(limits.peak_name, "the dense bf16 peak of h100-80gb");
  EXPECT_EQ(limits.worker, "workers/3");
  EXPECT_EQ(limits.gpu_memory_bytes, 85'520'809'984);

  spec.mutable_training()->set_precision(v1::FP8);
  limits = Limits(spec);
  EXPECT_EQ(limits.peak_tflops_per_gpu, 2 * 989);
  EXPECT_EQ(limits.peak_name, "the dense fp8 peak of h100-80gb");
}

TEST(CheckResultPlausibleTest, AcceptsFiguresUpToTheirBoundsAndTheirTolerance) {
  const ResultLimits limits = Limits(SmallSimSearch(1).spec());
  v1::ProbeResult result = SimResult();
  EXPECT_TRUE(CheckResultPlausible(result, limits).ok());
  result.set_model_tflops_per_gpu(989 * 1.019);
  result.set_peak_memory_bytes(static_cast<int64_t>(85'520'809'984 * 1.009));
  EXPECT_TRUE(CheckResultPlausible(result, limits).ok());
}

TEST(CheckResultPlausibleTest, RefusesWhatTheLeasedGpusAndBackendCannotProduce) {
  const ResultLimits limits = Limits(SmallSimSearch(1).spec());
  const struct {
    std::function<void(v1::ProbeResult&)> spoil;
    std::string message;
  } cases[] = {
      {[](v1::ProbeResult& r) { r.set_model_tflops_per_gpu(50'000); },
       "result.model_tflops_per_gpu (50000) must be at most 1008.78: the dense bf16 peak of "
       "h100-80gb (989 TFLOP/s) + 2%"},
      {[](v1::ProbeResult& r) { r.set_model_tflops_per_gpu(989 * 1.021); },
       "result.model_tflops_per_gpu (1009.77) must be at most 1008.78"},
      {[](v1::ProbeResult& r) { r.set_peak_memory_bytes(int64_t{200} * 1000 * 1000 * 1000); },
       "result.peak_memory_bytes (200000000000) must be at most 86376018083: the 85520809984 "
       "bytes per GPU that workers/3 registered + 1%"},
      {[](v1::ProbeResult& r) {
         r.set_backend("cuda");
         r.set_simulated(false);
       },
       "result.backend (\"cuda\") must be the backend the probe was leased with, \"sim\""},
  };
  for (const auto& c : cases) {
    v1::ProbeResult result = SimResult();
    c.spoil(result);
    const absl::Status status = CheckResultPlausible(result, limits);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << c.message;
    EXPECT_THAT(status.message(), HasSubstr(c.message));
  }
}

TEST(CheckResultPlausibleTest, AFailedProbeMayReportTheMemoryItAskedFor) {
  const ResultLimits limits = Limits(SmallSimSearch(1).spec());
  v1::ProbeResult result = SimResult();
  result.set_outcome(v1::PROBE_OUT_OF_MEMORY);
  result.set_peak_memory_bytes(int64_t{200} << 30);
  EXPECT_TRUE(CheckResultPlausible(result, limits).ok());
  // But not another backend's figures, nor TFLOP/s beyond the peak.
  result.set_model_tflops_per_gpu(50'000);
  EXPECT_EQ(CheckResultPlausible(result, limits).code(), absl::StatusCode::kInvalidArgument);
}

TEST(CheckResultPlausibleTest, AnFp8SearchMayReachTheFp8Peak) {
  v1::SearchSpec spec = SmallSimSearch(1).spec();
  v1::ProbeResult result = SimResult();
  result.set_model_tflops_per_gpu(1500);
  EXPECT_EQ(CheckResultPlausible(result, Limits(spec)).code(), absl::StatusCode::kInvalidArgument);
  spec.mutable_training()->set_precision(v1::FP8);
  EXPECT_TRUE(CheckResultPlausible(result, Limits(spec)).ok());
}

}  // namespace
}  // namespace paratune
