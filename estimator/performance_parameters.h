// The tunable parameters of the performance model (DESIGN.md §5.3) and their fitted values
// per GPU type.
#ifndef PARATUNE_ESTIMATOR_PERFORMANCE_PARAMETERS_H_
#define PARATUNE_ESTIMATOR_PERFORMANCE_PARAMETERS_H_

#include "estimator/cluster_spec.h"

namespace paratune {

// Tunable parameters of the model, per GPU type. Units: fractions in [0, 1], FLOPs, seconds.
struct PerformanceParameters {
  // Fraction of dense peak reached by large GEMMs.
  double gemm_efficiency_max = 0.75;
  // GEMM FLOPs at which efficiency is half of gemm_efficiency_max (smaller GEMMs are slower).
  double gemm_half_efficiency_flops = 2e9;
  // Fraction of dense peak reached by causal FlashAttention (forward and backward, counted as
  // 3x the forward FLOPs).
  double attention_efficiency = 0.45;
  // The same for attention without FlashAttention (TrainingOptions::flash_attention false):
  // batched QK^T and PV GEMMs around the softmax, dropout and masking of the s x s scores,
  // whose memory traffic makes it several times slower per FLOP.
  double unfused_attention_efficiency = 0.15;
  // Fixed seconds per transformer layer per forward or backward pass of one micro-batch:
  // kernel launches and the small memory-bound kernels (norms, rotary, activation).
  double layer_overhead_seconds = 0;
  // Fraction of the achievable bus bandwidth collectives reach (nccl-tests busbw / link).
  double nvlink_efficiency = 0.80;
  double network_efficiency = 0.80;
  // Latency per collective or send/recv, seconds.
  double nvlink_latency_seconds = 10e-6;
  double network_latency_seconds = 30e-6;
  // Fraction of each kind of communication hidden behind compute, 0 .. 1. tp_overlap applies
  // only to runs with TrainingOptions::tp_comm_overlap (Transformer Engine's userbuffers);
  // otherwise the TP collectives are exposed. cp_overlap is the fraction of one ring step's
  // attention time that can hide the step's K/V exchange.
  double tp_overlap = 0.0;
  double cp_overlap = 0.8;
  double dp_overlap = 0.7;
  double pp_overlap = 0.5;
  // Fraction of HBM bandwidth the optimizer step reaches.
  double optimizer_hbm_efficiency = 0.6;

  // fp8 training (TrainingSpec::fp8) as Transformer Engine runs it on Hopper. The four linear
  // layers of each transformer layer (QKV, attention projection, the MLP's two) run their
  // forward and both backward GEMMs in fp8 at a size-dependent fraction of the dense fp8 peak,
  // twice the bf16 peak (NVIDIA H100 Tensor Core GPU datasheet, H100 SXM: 989 TFLOP/s bf16 and
  // 1,979 TFLOP/s fp8, dense): eff(x) = fp8_gemm_efficiency_max x / (x +
  // fp8_gemm_half_efficiency_flops). Attention, the LM head and everything else stay bf16
  // and keep the parameters above.
  double fp8_gemm_efficiency_max = 0.6;
  double fp8_gemm_half_efficiency_flops = 1e11;
  // Fraction of HBM bandwidth reached by Transformer Engine's fused cast-transpose kernels,
  // which turn each fp8 linear's bf16 input (forward) and output gradient (backward) into an
  // fp8 copy and its fp8 transpose and record the tensor's amax, and cast the weights to fp8
  // once per step.
  double fp8_cast_hbm_efficiency = 0.6;

  // Not a parameter of the model's physics but of its accuracy: the one-sigma relative error
  // of a predicted step time (and so of the predicted TFLOP/s) among configurations of one
  // training setup once their common bias is removed. tools/fit_performance_model sets it to
  // the pooled spread of the fit's log residuals about each table's mean (docs/estimator.md);
  // OptimisticTflopsPerGpu turns it into an error bar.
  double relative_error = 0.1;

  // Mixture-of-experts models only (moe_performance.h); the defaults are priors stated with
  // their reasons, fitted per architecture where FittedPerformanceParameters says so.
  // The routed experts' grouped GEMM (Transformer Engine's GroupedLinear in TEGroupedMLP) at
  // eff(n) = c n / (n + grouped_gemm_half_efficiency_tokens) of the experts' dense peak, n the
  // tokens each local expert receives and c the dense GEMM ceiling of the experts' precision
  // (GroupedGemmEfficiency, moe_performance.h): the dense GEMM curve's form over tokens per
  // expert instead of FLOPs, since an expert's GEMM has a fixed h x f_e / etp weight and only
  // its token count varies. Prior: half the ceiling at 256 tokens, two of the 128-row tiles of
  // Hopper's bf16 GEMM kernels, below which the tensor cores mostly compute padding.
  double grouped_gemm_half_efficiency_tokens = 256;
  // Fraction of HBM bandwidth reached by the memory-bound MoE kernels: the permutation and
  // unpermutation copies of routed tokens and the router's score function and top-k. Prior:
  // PerformanceParameters::optimizer_hbm_efficiency's default.
  double moe_hbm_efficiency = 0.6;
  // The slowest rank's expert time over the mean rank's: the step waits for the most loaded
  // experts. 1 for force-balanced runs (the Megatron-Bridge rows of
  // data/measured/megatron_bridge_moe_h100.csv, --moe-router-force-load-balancing).
  double expert_load_imbalance = 1.0;
  // Fraction of the dispatch and combine communication hidden behind compute in runs with
  // TrainingOptions::moe_expert_parallel_overlap (otherwise Megatron-LM core_v0.19.0 runs the
  // all-to-all on the compute stream's critical path): --overlap-moe-expert-parallel-comm
  // (megatron/core/pipeline_parallel/combined_1f1b.py) interleaves one micro-batch's forward
  // with another's backward so that each one's all-to-all runs during the other's compute,
  // and --delay-wgrad-compute widens the window by deferring the weight-gradient GEMMs. Prior:
  // half, as cp_overlap's ring hides a step behind the attention it overlaps.
  double ep_comm_overlap = 0.5;
  // relative_error's counterpart for mixture-of-experts estimates: the MoE fit's own
  // leave-one-series-out spread (tools/fit_performance_model). An MoE estimate carries the
  // larger of the two (PredictionRelativeError). Prior: 0.3.
  double moe_relative_error = 0.3;
  // Fraction of the network's bandwidth the dispatcher's all-to-all reaches on the shares it
  // sends off the node (AllToAllSeconds, link_model.h), apart from PerformanceParameters::
  // network_efficiency, which the data-parallel ring collectives fit. Prior: 0.8, the dense
  // collectives' default.
  double all_to_all_network_efficiency = 0.8;
  // Fraction of a link's bandwidth, NVLink inside a node and the network across nodes, that
  // the flex dispatcher's fused kernels (DeepEP, HybridEP: TokenDispatcher::kFlexDeepEp,
  // kFlexHybridEp) reach (FlexDispatchForwardSeconds, moe_performance.h). One figure for both
  // links and both backends: their dispatch and combine are copies run by a few SMs (DeepEP 20
  // unless --moe-flex-dispatcher-num-sms, token_dispatcher.py:1278-1282), which bound the
  // bandwidth rather than the link; the two measured layouts (one inside a node, one across
  // two) cannot tell more figures apart. Prior: 0.8, the dense collectives' default.
  double flex_link_efficiency = 0.8;
  // relative_error's counterpart for estimates with a flex dispatcher: the flex fit's own
  // leave-one-series-out spread (tools/fit_performance_model), each series one layout.
  // Prior: 0.3.
  double flex_relative_error = 0.3;

  // TorchTitan (TrainingSpec::framework) only: the fraction of Megatron-LM's compute
  // throughput its PyTorch stack reaches on the same GPU for the same FLOPs, which divides the
  // compute time of every micro-batch; one for eager runs, one for runs whose transformer
  // blocks torch.compile fuses (TrainingSpec::torch_compile). TorchTitan's blocks run as
  // PyTorch kernels: cuBLAS GEMMs without Transformer Engine's fused cast, norm and bias
  // kernels, scaled_dot_product_attention's FlashAttention-2 kernels rather than cuDNN's
  // Hopper ones, and, eager, separate RMSNorm, rotary and SwiGLU kernels, which Inductor fuses
  // when compiled. Prior 1 (Megatron-LM's); fitted on Hopper to TorchTitan's own benchmark
  // (data/measured/torchtitan_h100_202412.csv: 2 eager rows, 16 compiled).
  double torchtitan_eager_compute_efficiency = 1.0;
  double torchtitan_compiled_compute_efficiency = 1.0;
  // TorchTitan only, with FlashAttention: its causal attention's throughput as a share of
  // what the compute efficiency above leaves it, which divides the attention's time on top of
  // that efficiency. Its attention is a different kernel from the GEMMs the efficiency above
  // mostly prices: F.scaled_dot_product_attention (torchtitan/models/llama/model.py:209 at
  // 9dec370) runs PyTorch's FlashAttention-2 kernels where Megatron-LM runs Transformer
  // Engine's cuDNN ones, and under context parallelism PyTorch's ring attention splits it into
  // one SDPA call per ring step on half blocks (load balancing) and merges the partial outputs
  // in fp32 (torch/distributed/tensor/experimental/_attention.py, _templated_ring_attention
  // and _SDPAMerger). The attention's share of a layer grows with the sequence (s^2 against
  // s), so one efficiency for both cannot follow runs of 8K to 256K tokens. Prior 1 (the same
  // share as the rest); fitted with the two fields above.
  double torchtitan_attention_efficiency = 1.0;
  // relative_error's counterpart for TorchTitan estimates: the TorchTitan fit's
  // leave-one-series-out spread. Prior: 0.3.
  double torchtitan_relative_error = 0.3;
};

// The GPU architectures with fitted parameters.
enum class GpuArchitecture { kAmpere, kHopper };

// Ampere for "a100-*", Hopper for "h100-*" and "h200-*" (same SMs, more HBM); any other name
// by its dense bf16 peak (>= 500 TFLOP/s is Hopper-class). Allocation-free.
GpuArchitecture ArchitectureOf(const GpuSpec& gpu);

// The parameters fitted for `architecture` by tools/fit_performance_model (values and the
// command that produced them in performance_parameters.cc).
PerformanceParameters FittedPerformanceParameters(GpuArchitecture architecture);

// The fitted parameters of gpu's architecture.
PerformanceParameters DefaultPerformanceParameters(const GpuSpec& gpu);

}  // namespace paratune

#endif  // PARATUNE_ESTIMATOR_PERFORMANCE_PARAMETERS_H_
