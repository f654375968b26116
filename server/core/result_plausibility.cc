#include "server/core/result_plausibility.h"

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "convert/spec_convert.h"
#include "estimator/performance_model.h"

namespace paratune {

absl::StatusOr<ResultLimits> ResultLimitsOf(const v1::SearchSpec& spec, const v1::Worker& worker) {
  PT_ASSIGN_OR_RETURN(const ClusterSpec cluster, ClusterSpecFromProto(spec.cluster()));
  PT_ASSIGN_OR_RETURN(const TrainingSpec training, TrainingSpecFromProto(spec.training()));
  const GpuSpec& gpu = cluster.gpu();
  ResultLimits limits;
  limits.backend = spec.probe().backend();
  limits.peak_tflops_per_gpu = DensePeakTflops(gpu, training);
  limits.peak_name = absl::StrCat("the dense ", UsesFp8TensorCores(gpu, training) ? "fp8" : "bf16",
                                  " peak of ", gpu.name.empty() ? "the search's GPU" : gpu.name);
  limits.worker = worker.name();
  // A worker's GPUs are of one type (ValidateRegisterWorkerRequest), and it has at least one.
  limits.gpu_memory_bytes = worker.gpus(0).memory_bytes();
  return limits;
}

absl::Status CheckResultPlausible(const v1::ProbeResult& result, const ResultLimits& limits) {
  if (result.backend() != limits.backend) {
    return absl::InvalidArgumentError(absl::StrCat(
        "result.backend (\"", absl::CHexEscape(result.backend()),
        "\") must be the backend the probe was leased with, \"", limits.backend, "\""));
  }
  const double most_tflops = limits.peak_tflops_per_gpu * (1 + kPeakTflopsTolerance);
  if (result.model_tflops_per_gpu() > most_tflops) {
    return absl::InvalidArgumentError(
        absl::StrCat("result.model_tflops_per_gpu (", result.model_tflops_per_gpu(),
                     ") must be at most ", most_tflops, ": ", limits.peak_name, " (",
                     limits.peak_tflops_per_gpu, " TFLOP/s) + ", kPeakTflopsTolerance * 100, "%"));
  }
  if (result.outcome() != v1::PROBE_OK) return absl::OkStatus();
  const double most_bytes =
      static_cast<double>(limits.gpu_memory_bytes) * (1 + kPeakMemoryTolerance);
  if (static_cast<double>(result.peak_memory_bytes()) > most_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "result.peak_memory_bytes (", result.peak_memory_bytes(), ") must be at most ",
        static_cast<int64_t>(most_bytes), ": the ", limits.gpu_memory_bytes, " bytes per GPU that ",
        limits.worker, " registered + ", kPeakMemoryTolerance * 100, "%"));
  }
  return absl::OkStatus();
}

}  // namespace paratune
