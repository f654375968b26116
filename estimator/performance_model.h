// Predicted step time of one configuration (DESIGN.md §5.3): model FLOPs, compute at a
// size-dependent efficiency, TP/CP/DP/PP communication with nccl-tests bus-bandwidth factors,
// and the pipeline bubble. Used to order candidates; rank correlation matters most.
#ifndef PARATUNE_ESTIMATOR_PERFORMANCE_MODEL_H_
#define PARATUNE_ESTIMATOR_PERFORMANCE_MODEL_H_

#include "estimator/cluster_spec.h"
#include "estimator/model_spec.h"
#include "estimator/parallel_config.h"
#include "estimator/performance_parameters.h"
#include "estimator/training_spec.h"

namespace paratune {

// Seconds and rates; see PerformanceEstimate in proto/estimate.proto for each field.
struct PerformanceEstimate {
  double step_time_seconds = 0;
  double compute_seconds = 0;
  double pipeline_bubble_seconds = 0;
  double tp_communication_seconds = 0;
  double cp_communication_seconds = 0;
  double ep_communication_seconds = 0;
  double dp_communication_seconds = 0;
  double pp_communication_seconds = 0;
  double optimizer_seconds = 0;
  double tokens_per_second = 0;
  double model_tflops_per_gpu = 0;
  // model_tflops_per_gpu / mfu_peak_tflops: MFU against DensePeakTflops, the dense peak of
  // the precision the linears run in (fp8 runs on Hopper against the fp8 peak, all others
  // against the bf16 peak); mfu_peak_is_fp8 says which.
  double mfu = 0;
  double mfu_peak_tflops = 0;
  bool mfu_peak_is_fp8 = false;
  double model_flops_per_step = 0;
  // One-sigma relative error of step time and throughput: PredictionRelativeError of the
  // parameters that made the estimate.
  double relative_error = 0;
};

// The one-sigma relative error of a prediction for `model` trained as `training` with
// `params`: PerformanceParameters::relative_error, or the wider moe_relative_error for a
// mixture-of-experts model, flex_relative_error for one with a flex dispatcher and
// torchtitan_relative_error under TorchTitan (each fitted to its own runs), the largest that
// applies.
double PredictionRelativeError(const ModelSpec& model, const TrainingSpec& training,
                               const PerformanceParameters& params);

// Model FLOPs of one optimizer step, Megatron-LM's num_floating_point_operations (pre-2025
// convention): GBS s [12 L h^2 (1 + k/a + s/h) + 6 M L f h + 6 V h], with M = 3 weight
// matrices in a gated (SwiGLU) MLP and 2 otherwise; for a GPT (k = a, f = 4h, M = 2) this is
// Narayanan et al. 2021's 72 GBS s L h^2 (1 + s/(6h) + V/(12 L h)). Heads of width d other
// than h / a make the attention term 12 L h^2 (ad/h + kd/h + (ad/h) s/h); an MoE layer's MLP
// term counts the widths a token passes through, k_r f_e + n_s f_s instead of f (the router
// GEMM is not counted, as in Megatron-LM). Megatron-Bridge's published MoE figures use the
// 2025 convention instead, which halves the causal attention term (MegatronCoreFlopsPerToken,
// moe_performance.h); paratune ranks and validates by tokens/s, which neither changes.
double ModelFlopsPerStep(const ModelSpec& model, const TrainingSpec& training);

// Dense tensor-core peak per GPU, TFLOP/s, of the linear layers' GEMMs in `training`'s
// precision: the bf16 peak (GpuSpec::peak_bf16_tflops), or for fp8 on a Hopper-class GPU
// (ArchitectureOf) twice it (NVIDIA H100 Tensor Core GPU datasheet, H100 SXM: 989 TFLOP/s
// bf16, 1,979 TFLOP/s fp8, both dense). Ampere has no fp8 tensor cores (Transformer Engine
// needs compute capability 8.9 for fp8): its fp8 peak is its bf16 peak.
double DensePeakTflops(const GpuSpec& gpu, const TrainingSpec& training);

// Whether DensePeakTflops is an fp8 peak: fp8 training on a Hopper-class GPU.
bool UsesFp8TensorCores(const GpuSpec& gpu, const TrainingSpec& training);

// Pure and allocation-free. Uneven pipeline splits (pipeline_layout.h) are paced by their
// slowest stage.
PerformanceEstimate PredictPerformance(const ModelSpec& model, const TrainingSpec& training,
                                       const ClusterSpec& cluster, const ParallelConfig& config,
                                       const PerformanceParameters& params);

// The optimistic end of the estimate's error bar: the TFLOP/s per GPU reached if the step
// time is `sigmas` relative errors shorter than predicted (errors are log-normal),
// model_tflops_per_gpu x exp(sigmas x relative_error). An ADAPTIVE search can stop when no
// unprobed candidate's optimistic figure beats the best measured one by more than its
// tolerance (DESIGN.md §6; docs/estimator.md says how often the measured value exceeded it).
double OptimisticTflopsPerGpu(const PerformanceEstimate& estimate, double sigmas);

}  // namespace paratune

#endif  // PARATUNE_ESTIMATOR_PERFORMANCE_MODEL_H_
