#include "server/core/test_probe_result.h"

#include <cstdint>

namespace paratune {

v1::ProbeResult CompleteProbeResult() {
  v1::ProbeResult result;
  result.set_outcome(v1::PROBE_OK);
  result.set_backend("cuda");
  for (double t : {1.0, 1.1}) result.add_step_times_seconds(t);
  result.set_mean_step_time_seconds(1.05);
  result.set_tokens_per_second(1e6);
  result.set_model_tflops_per_gpu(400);
  result.set_peak_memory_bytes(int64_t{60} << 30);
  result.set_message("measured");
  result.add_measured("gemm");
  result.add_modelled("dp_collectives");
  result.add_extrapolated("full_step");
  result.set_wall_seconds(120);
  result.set_startup_seconds(30);

  v1::ProbeMeasurements& measurements = *result.mutable_measurements();
  measurements.set_median_step_time_seconds(1.05);
  measurements.set_min_step_time_seconds(1.0);
  measurements.set_max_step_time_seconds(1.1);
  measurements.set_step_time_cv(0.07);
  v1::PhaseTime& phase = *measurements.add_phases();
  phase.set_phase("gemm");
  phase.set_seconds(0.6);
  v1::CollectiveBandwidth& collective = *measurements.add_collectives();
  collective.set_group("tp");
  collective.set_operation("all_gather");
  collective.set_ranks(8);
  collective.set_bytes(int64_t{1} << 26);
  collective.set_seconds(0.001);
  collective.set_algorithm_bandwidth_gbps(67);
  collective.set_bus_bandwidth_gbps(58.7);
  v1::MemoryTermBytes& term = *measurements.add_memory_terms();
  term.set_term("weights");
  term.set_estimated_bytes(int64_t{16} << 30);
  term.set_allocated_bytes(int64_t{16} << 30);
  measurements.set_estimated_peak_memory_bytes(int64_t{58} << 30);
  measurements.set_predicted_step_time_seconds(1.0);
  measurements.set_modelled_dp_seconds_per_step(0.05);
  measurements.set_gpu_name("NVIDIA H100 80GB HBM3");
  measurements.set_driver_version("580.159.04");
  measurements.set_cuda_driver_version("13.0");
  measurements.set_cuda_runtime_version("13.0");
  measurements.set_nccl_version("2.28.9");
  measurements.set_attention_kernel("chunked");
  measurements.set_attention_fallback_reason("cuDNN found no engine for the shape");
  measurements.set_attention_backward_kernel("chunked");
  measurements.set_attention_backward_fallback_reason("context_parallel 2");
  measurements.set_micro_batches_per_step(32);

  v1::ProbeHost& host = *result.add_ran_on();
  host.set_worker("workers/1");
  host.set_hostname("gpu-node-1");
  host.set_first_rank(0);
  host.set_num_ranks(8);
  host.set_gpu_name("NVIDIA H100 80GB HBM3");
  host.set_gpu_type("h100-80gb");

  for (int64_t micro_batches : {8, 16}) {
    v1::ShortSteps& series = *result.add_short_steps();
    series.set_micro_batches(micro_batches);
    for (double t : {0.3, 0.32}) series.add_step_times_seconds(t * micro_batches / 8);
  }
  v1::StepExtrapolation& extrapolation = *result.mutable_extrapolation();
  extrapolation.set_full_micro_batches(32);
  extrapolation.set_slot_seconds(0.03);
  extrapolation.set_fill_drain_seconds(0.1);
  extrapolation.set_fixed_seconds(-0.01);
  return result;
}

v1::ProbeResult TimedResult(double tflops, double step_seconds, int64_t steps,
                            double relative_spread) {
  v1::ProbeResult result;
  result.set_outcome(v1::PROBE_OK);
  for (int64_t k = 0; k < steps; ++k) {
    result.add_step_times_seconds(step_seconds *
                                  (1 + (k % 2 == 0 ? relative_spread : -relative_spread)));
  }
  result.set_mean_step_time_seconds(step_seconds);
  result.set_model_tflops_per_gpu(tflops);
  return result;
}

}  // namespace paratune
