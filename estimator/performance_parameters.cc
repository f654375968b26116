#include "estimator/performance_parameters.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"

namespace paratune {

GpuArchitecture ArchitectureOf(const GpuSpec& gpu) {
  const std::string name = absl::AsciiStrToLower(gpu.name);
  if (absl::StartsWith(name, "a100")) return GpuArchitecture::kAmpere;
  if (absl::StartsWith(name, "h100") || absl::StartsWith(name, "h200")) {
    return GpuArchitecture::kHopper;
  }
  return gpu.peak_bf16_tflops >= 500 ? GpuArchitecture::kHopper : GpuArchitecture::kAmpere;
}

PerformanceParameters FittedPerformanceParameters(GpuArchitecture architecture) {
  PerformanceParameters params;
  // FITTED-PARAMETERS-BEGIN
  // Produced by `bazel run //tools:fit_performance_model --
  //     --update=$PWD/estimator/performance_parameters.cc` from
  // data/measured/ (held-out llama31_8b_4d_abci_tsubame.csv excluded).
  switch (architecture) {
    case GpuArchitecture::kAmpere:
      // RMS log error 0.1667 -> 0.0422 in 518 sweeps.
      params.gemm_efficiency_max = 0.742578;
      params.gemm_half_efficiency_flops = 1e+07;
      params.attention_efficiency = 0.52;
      params.unfused_attention_efficiency = 0.12647;
      params.layer_overhead_seconds = 0.0013623;
      params.network_efficiency = 0.541504;
      params.tp_overlap = 0;
      params.cp_overlap = 0.8;
      params.dp_overlap = 0.233234;
      params.pp_overlap = 0.95;
      params.relative_error = 0.0511;
      break;
    case GpuArchitecture::kHopper:
      // RMS log error 0.1341 -> 0.0390 in 291 sweeps.
      params.gemm_efficiency_max = 0.637988;
      params.gemm_half_efficiency_flops = 5.41948e+10;
      params.attention_efficiency = 0.336841;
      params.unfused_attention_efficiency = 0.12647;
      params.layer_overhead_seconds = 0;
      params.network_efficiency = 0.355176;
      params.tp_overlap = 0.95;
      params.cp_overlap = 0.8;
      params.dp_overlap = 0.933301;
      params.pp_overlap = 0.213263;
      params.relative_error = 0.0629;
      break;
  }
  // FITTED-PARAMETERS-END
  return params;
}

PerformanceParameters DefaultPerformanceParameters(const GpuSpec& gpu) {
  return FittedPerformanceParameters(ArchitectureOf(gpu));
}

}  // namespace paratune
