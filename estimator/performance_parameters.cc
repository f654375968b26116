#include "estimator/performance_parameters.h"

#include "absl/strings/match.h"

namespace paratune {

GpuArchitecture ArchitectureOf(const GpuSpec& gpu) {
  // Compared without a lowercase copy: PredictPerformance asks for every fp8 estimate.
  if (absl::StartsWithIgnoreCase(gpu.name, "a100")) return GpuArchitecture::kAmpere;
  if (absl::StartsWithIgnoreCase(gpu.name, "h100") ||
      absl::StartsWithIgnoreCase(gpu.name, "h200")) {
    return GpuArchitecture::kHopper;
  }
  return gpu.peak_bf16_tflops >= 500 ? GpuArchitecture::kHopper : GpuArchitecture::kAmpere;
}

PerformanceParameters FittedPerformanceParameters(GpuArchitecture architecture) {
  PerformanceParameters params;
  // FITTED-PARAMETERS-BEGIN
  // Produced by `bazel run //tools:fit_performance_model --
  //     --update=$PWD/estimator/performance_parameters.cc` from
  // data/measured/ (held-out llama31_8b_4d_abci_tsubame.csv and
  // nvidia_h100_fp8.csv excluded).
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
      // No fp8 tensor cores: the fp8 linears run as bf16 GEMMs (fp8 peak =
      // bf16 peak, the bf16 GEMM efficiency) plus the casts. Not fitted.
      params.fp8_gemm_efficiency_max = 0.742578;
      params.fp8_gemm_half_efficiency_flops = 1e+07;
      params.fp8_cast_hbm_efficiency = 0.6;
      // No mixture-of-experts runs on this architecture: the priors, and Hopper's spread
      // as the error bar.
      params.grouped_gemm_half_efficiency_tokens = 256;
      params.all_to_all_network_efficiency = 0.8;
      params.ep_comm_overlap = 0.5;
      params.moe_relative_error = 0.3647;
      // No flex-dispatcher runs on this architecture: the prior, and Hopper's spread
      // as the error bar.
      params.flex_link_efficiency = 0.8;
      params.flex_relative_error = 1.0962;
      // No TorchTitan runs on this architecture: the prior, and Hopper's spread
      // as the error bar.
      params.torchtitan_eager_compute_efficiency = 1;
      params.torchtitan_compiled_compute_efficiency = 1;
      params.torchtitan_attention_efficiency = 1;
      params.torchtitan_relative_error = 0.0738;
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
      // fp8, the FP8 rows of nvidia_dgxc_h100.csv with the fields above fixed: RMS
      // log error 0.0601 -> 0.0587 in 333 sweeps; leave-one-series-out spread 0.0586
      // (fitting fp8_cast_hbm_efficiency too: 0.2367, RMS 0.0550, spread 0.0660).
      params.fp8_gemm_efficiency_max = 0.642773;
      params.fp8_gemm_half_efficiency_flops = 1.57745e+11;
      params.fp8_cast_hbm_efficiency = 0.6;
      // Mixture-of-experts, the 8 all-to-all runs of the MoE tables (MoeDatasets)
      // with the fields above fixed: RMS log error 0.1203 -> 0.0160 in 279 sweeps;
      // leave-one-series-out spread 0.3647.
      params.grouped_gemm_half_efficiency_tokens = 1589.78;
      params.all_to_all_network_efficiency = 0.297052;
      params.ep_comm_overlap = 0.798267;
      params.moe_relative_error = 0.3647;
      // The flex dispatcher, the 4 flex runs of the MoE tables (two layouts)
      // with the fields above fixed: RMS log error 0.3594 -> 0.2312 in 22 sweeps;
      // leave-one-series-out spread 1.0962.
      params.flex_link_efficiency = 0.274323;
      params.flex_relative_error = 1.0962;
      // TorchTitan, the 18 runs of torchtitan_h100_202412.csv
      // with the fields above fixed: RMS log error 0.4616 -> 0.0763 in 35 sweeps;
      // leave-one-series-out spread 0.0738.
      params.torchtitan_eager_compute_efficiency = 0.652539;
      params.torchtitan_compiled_compute_efficiency = 0.732617;
      params.torchtitan_attention_efficiency = 0.712598;
      params.torchtitan_relative_error = 0.0738;
      break;
  }
  // FITTED-PARAMETERS-END
  return params;
}

PerformanceParameters DefaultPerformanceParameters(const GpuSpec& gpu) {
  return FittedPerformanceParameters(ArchitectureOf(gpu));
}

}  // namespace paratune
