// Predicted step time of one configuration (DESIGN.md §5.3): model FLOPs, compute at a
// size-dependent efficiency, TP/CP/DP/PP communication with nccl-tests bus-bandwidth factors,
// and the pipeline bubble. Used to order candidates; rank correlation matters most.
#ifndef PARATUNE_ESTIMATOR_PERFORMANCE_MODEL_H_
#define PARATUNE_ESTIMATOR_PERFORMANCE_MODEL_H_

#include "estimator/cluster_spec.h"
#include "estimator/model_spec.h"
#include "estimator/parallel_config.h"
#include "estimator/training_spec.h"

namespace paratune {

// Tunable parameters of the model, per GPU type.
struct PerformanceParameters {
  // Fraction of dense peak reached by large GEMMs.
  double gemm_efficiency_max = 0.75;
  // GEMM FLOPs at which efficiency is half of gemm_efficiency_max (smaller GEMMs are slower).
  double gemm_half_efficiency_flops = 2e9;
  // Fraction of dense peak reached by causal FlashAttention.
  double attention_efficiency = 0.45;
  // Fraction of the achievable bus bandwidth collectives reach (nccl-tests busbw / link).
  double nvlink_efficiency = 0.80;
  double network_efficiency = 0.80;
  // Latency per collective or send/recv, seconds.
  double nvlink_latency_seconds = 10e-6;
  double network_latency_seconds = 30e-6;
  // Fraction of each kind of communication hidden behind compute, 0 .. 1.
  double tp_overlap = 0.0;
  double cp_overlap = 0.8;
  double dp_overlap = 0.7;
  double pp_overlap = 0.5;
  // Fraction of HBM bandwidth the optimizer step reaches.
  double optimizer_hbm_efficiency = 0.6;
};

// The parameters for `gpu` (defaults until fitted values exist for its type).
PerformanceParameters DefaultPerformanceParameters(const GpuSpec& gpu);

// Seconds and rates; see PerformanceEstimate in proto/estimate.proto for each field.
struct PerformanceEstimate {
  double step_time_seconds = 0;
  double compute_seconds = 0;
  double pipeline_bubble_seconds = 0;
  double tp_communication_seconds = 0;
  double cp_communication_seconds = 0;
  double dp_communication_seconds = 0;
  double pp_communication_seconds = 0;
  double optimizer_seconds = 0;
  double tokens_per_second = 0;
  double model_tflops_per_gpu = 0;
  double mfu = 0;
  double model_flops_per_step = 0;
};

// Model FLOPs of one optimizer step, Megatron's convention for SwiGLU Llama:
// GBS s [12 L h^2 (1 + k/a + s/h) + 18 L f h + 6 V h].
double ModelFlopsPerStep(const ModelSpec& model, const TrainingSpec& training);

// Pure and allocation-free.
PerformanceEstimate PredictPerformance(const ModelSpec& model, const TrainingSpec& training,
                                       const ClusterSpec& cluster,
                                       const ParallelConfig& config,
                                       const PerformanceParameters& params);

}  // namespace paratune

#endif  // PARATUNE_ESTIMATOR_PERFORMANCE_MODEL_H_
