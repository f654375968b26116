#include "estimator/performance_model.h"

#include <algorithm>
#include <cmath>

#include "estimator/config_symbols.h"
#include "estimator/link_model.h"
#include "estimator/model_states.h"
#include "estimator/moe_memory.h"
#include "estimator/moe_performance.h"
#include "estimator/pipeline_layout.h"

namespace paratune {
namespace {

constexpr double kGiga = 1e9;
constexpr double kTera = 1e12;

using Symbols = ConfigSymbols;

// The share of Megatron-LM's compute throughput the training's framework reaches, compiled
// or not.
double FrameworkComputeEfficiency(const TrainingSpec& training,
                                  const PerformanceParameters& params) {
  if (training.framework() != Framework::kTorchTitan) return 1;
  return training.torch_compile() ? params.torchtitan_compiled_compute_efficiency
                                  : params.torchtitan_eager_compute_efficiency;
}

// Forward passes per micro-batch: the forward itself, plus one more when full recompute
// re-runs every layer before its backward.
double ForwardPasses(Recompute recompute) { return recompute == Recompute::kFull ? 2 : 1; }

// The efficiency of the training's attention kernels: fused (FlashAttention) or not, and
// TorchTitan's SDPA at its own share (torchtitan_attention_efficiency) of the fused one.
double AttentionEfficiency(const TrainingSpec& training, const PerformanceParameters& params) {
  if (!training.flash_attention()) return params.unfused_attention_efficiency;
  if (training.framework() != Framework::kTorchTitan) return params.attention_efficiency;
  return params.attention_efficiency * params.torchtitan_attention_efficiency;
}

// Forward seconds of causal attention (QK^T and PV, 4 s^2 b h FLOPs over s tokens, halved by
// the mask) of one layer's TP shard for one micro-batch: each CP rank's s/c queries meet s/2
// keys on average under load balancing.
double AttentionForwardSeconds(const Symbols& x, const TrainingSpec& training, double peak_flops,
                               const PerformanceParameters& params) {
  return 2 * (x.s * x.b / x.c) * x.s * x.attention_width / x.t /
         (peak_flops * AttentionEfficiency(training, params));
}

// HBM seconds of Transformer Engine's casts for the fp8 linears of one layer and one
// micro-batch. Each fp8 linear casts its bf16 input (forward) and its output gradient
// (backward) with one fused cast-transpose kernel that reads 2 bytes per value and writes the
// fp8 value and its fp8 transpose (1 + 1 bytes; Hopper's fp8 GEMM takes only the TN layout, so
// the weight-gradient GEMM needs the transposes) and records the amax in the same pass
// (transformer_engine/common/transpose/cast_transpose.cu): 4 bytes per value. Values per
// token of the layer's TP shard, as the GEMMs see them (SP-gathered for the column-parallel
// QKV and first MLP linear): inputs h (QKV) + ad/t (projection) + h (first MLP linear) + f/t
// (down projection); output gradients (ad + 2kd)/t + h + (M-1) f/t + h. Full recompute runs
// the forward casts twice. `with_mlp` false leaves out the MLP's two linears: an MoE layer's
// experts cast their own (ExpertFp8CastSeconds, moe_performance.h).
double Fp8CastSeconds(const Symbols& x, Recompute recompute, bool with_mlp, const GpuSpec& gpu,
                      const PerformanceParameters& params) {
  const double tokens = x.s * x.b / x.c;
  const double mlp = with_mlp ? 1 : 0;
  const double inputs = x.h + mlp * x.h + (x.attention_width + mlp * x.f) / x.t;
  const double output_gradients =
      x.h + mlp * x.h +
      (x.attention_width + 2 * x.kv_width + mlp * (x.mlp_matrices - 1) * x.f) / x.t;
  const double bytes = 4 * tokens * (ForwardPasses(recompute) * inputs + output_gradients);
  return bytes / (gpu.hbm_bandwidth_gbps * kGiga * params.fp8_cast_hbm_efficiency);
}

// Weights of the four linear layers of one transformer layer: the layer's parameters less
// its two norm weights (2h).
double LinearParameters(const Symbols& x) { return x.layer_params - 2 * x.h; }

// Parameters per GPU of a stage's linear layers in fp8 modules: the TP-sharded dense linears
// (an MoE layer's attention has two) and the experts' and shared experts' linears.
double Fp8LinearParameters(const Symbols& x, const ModelSpec& model, const ParallelConfig& config,
                           const StageLayerCounts& stage) {
  const double dense =
      (stage.layers * LinearParameters(x) - stage.moe_layers * MlpParameters(x)) / x.t;
  if (stage.moe_layers == 0) return dense;
  const int64_t moe_layers = static_cast<int64_t>(stage.moe_layers);
  return dense + ExpertParameters(model, ExpertParallelismOf(config), moe_layers) +
         SharedExpertParameters(model, config.dims(), moe_layers);
}

// HBM seconds per step of casting `linear_parameters` weights (Fp8LinearParameters) to fp8:
// the Megatron-Core TE modules pass is_first_microbatch, so each weight is cast once per step
// and its fp8 copy and fp8 transpose are cached for the other micro-batches
// (megatron/core/extensions/transformer_engine.py, TELinear): 2 bytes read and 2 written per
// weight, or with fp8 model weights (fp8_param_gather) only the transpose, 1 read and 1
// written.
double Fp8WeightCastSeconds(const TrainingSpec& training, double linear_parameters,
                            const GpuSpec& gpu, const PerformanceParameters& params) {
  const double bytes_per_weight = training.fp8_param_gather() ? 2 : 4;
  return linear_parameters * bytes_per_weight /
         (gpu.hbm_bandwidth_gbps * kGiga * params.fp8_cast_hbm_efficiency);
}

// Seconds per micro-batch of Transformer Engine's delayed-scaling bookkeeping: on leaving
// each fp8_autocast region (one per model chunk and micro-batch, forward and backward) TE
// all-reduces the amaxes of the chunk's fp8 tensors over the amax reduction group (all
// ranks of the pipeline stage: tp x cp x dp, Megatron-Core's get_amax_reduction_group) and
// updates the scales in one fused kernel. The buffer is a few KiB: one collective latency
// each.
double Fp8AmaxSeconds(const Symbols& x, const ParallelConfig& config, const ClusterSpec& cluster,
                      const PerformanceParameters& params) {
  const int64_t group = config.tp() * config.cp() * config.dp();
  if (group == 1) return 0;
  return 2 * x.v * LinkForSpan(group, cluster, params).latency_seconds;
}

// Forward seconds of one linear GEMM of `flops`: bf16 at GemmSeconds, or fp8 at
// Fp8GemmSeconds against the fp8 peak.
double LinearGemmSeconds(double flops, bool fp8, double peak_flops, double fp8_peak_flops,
                         const PerformanceParameters& params) {
  return fp8 ? Fp8GemmSeconds(flops, fp8_peak_flops, params)
             : GemmSeconds(flops, peak_flops, params);
}

// Forward seconds of the linear GEMMs of one layer's TP shard for one micro-batch on s/c
// tokens: QKV (h to ad + 2kd), the output projection (ad to h) and, `with_mlp`, the MLP's
// first linear and down projection.
double LinearGemmForwardSeconds(const Symbols& x, bool with_mlp, bool fp8, double peak_flops,
                                double fp8_peak_flops, const PerformanceParameters& params) {
  const double tokens = x.s * x.b / x.c;
  const double qkv = 2 * tokens * x.h * (x.attention_width + 2 * x.kv_width) / x.t;
  const double out = 2 * tokens * x.attention_width * x.h / x.t;
  double seconds = LinearGemmSeconds(qkv, fp8, peak_flops, fp8_peak_flops, params) +
                   LinearGemmSeconds(out, fp8, peak_flops, fp8_peak_flops, params);
  if (!with_mlp) return seconds;
  const double mlp_in = 2 * tokens * x.h * (x.mlp_matrices - 1) * x.f / x.t;
  const double mlp_out = 2 * tokens * x.f * x.h / x.t;
  return seconds + LinearGemmSeconds(mlp_in, fp8, peak_flops, fp8_peak_flops, params) +
         LinearGemmSeconds(mlp_out, fp8, peak_flops, fp8_peak_flops, params);
}

// Compute seconds of one layer for one micro-batch, forward and backward (2x forward): the
// GEMMs of the layer's TP shard on s/c tokens, causal attention, the fixed per-pass overhead
// and, for fp8, the casts of the fp8 linears. fp8 changes only the linears: their GEMMs
// (forward, data and weight gradients) run in fp8, while attention (TE's DotProductAttention
// outside fp8_dpa) stays bf16. `with_mlp` false: an MoE layer, whose MoE block
// (MoeLayerSeconds) the caller adds.
double LayerComputeSeconds(const Symbols& x, const TrainingSpec& training, Recompute recompute,
                           bool with_mlp, const GpuSpec& gpu, double peak_flops,
                           double fp8_peak_flops, const PerformanceParameters& params) {
  const double gemm_forward =
      LinearGemmForwardSeconds(x, with_mlp, training.fp8(), peak_flops, fp8_peak_flops, params);
  const double attention_forward = AttentionForwardSeconds(x, training, peak_flops, params);
  const double forwards = ForwardPasses(recompute);
  double layer = (forwards + 2) * (gemm_forward + attention_forward) +
                 (forwards + 1) * params.layer_overhead_seconds;
  if (training.fp8()) layer += Fp8CastSeconds(x, recompute, with_mlp, gpu, params);
  // Selective recompute re-runs the attention core before its backward (Korthikanti et al.
  // 2022; Megatron-LM's checkpointed core attention), FlashAttention or not, where it frees
  // next to nothing: the memory model keeps the same activations, so it never beats kNone.
  if (recompute == Recompute::kSelective) layer += attention_forward;
  return layer;
}

// Compute seconds of the LM head (forward and backward) of one micro-batch. It stays bf16 in
// fp8 runs: Megatron-LM builds the output layer outside fp8_autocast (TransformerBlock wraps
// only the transformer layers in it).
double LmHeadSeconds(const Symbols& x, double peak_flops, const PerformanceParameters& params) {
  return 3 * GemmSeconds(2 * x.s * x.b / x.c * x.h * x.V / x.t, peak_flops, params);
}

// Exposed TP seconds of one layer for one micro-batch. With SP (Korthikanti et al. 2022, arXiv
// 2205.05198) each layer runs 2 all-gathers and 2 reduce-scatters forward and 6 backward
// (their transposes plus re-gathering inputs for the weight gradients); without SP, 2
// all-reduces each way. Every collective moves the whole s/c-token activation, 2sbh/c bytes.
// Only runs that overlap TP communication with the GEMMs hide any of it.
double LayerTpSeconds(const Symbols& x, const TrainingSpec& training, const ParallelConfig& config,
                      const ClusterSpec& cluster, const PerformanceParameters& params) {
  if (config.tp() == 1) return 0;
  const Link link = LinkForSpan(config.tp(), cluster, params);
  const double bytes = 2 * x.s * x.b * x.h / x.c;
  const double forwards = ForwardPasses(config.recompute());
  double layer;
  if (config.sequence_parallel()) {
    layer = (4 * forwards + 6) * GatherOrScatterSeconds(bytes, x.t, link);
  } else {
    layer = (2 * forwards + 2) * AllReduceSeconds(bytes, x.t, link);
  }
  return training.tp_comm_overlap() ? layer * (1 - params.tp_overlap) : layer;
}

// Exposed CP seconds of one layer for one micro-batch. Each rank holds its K and V, 2 (s/c) b
// (kh/a)/t values of 2 bytes, and every forward pass (two under full recompute) exchanges
// them, the backward pass K, V and their gradients twice as often.
// - p2p (Megatron-LM's default): ring attention (Liu et al. 2023, arXiv 2310.01889;
//   Megatron-Core's context parallelism) passes them c-1 times per exchange, each step running
//   while the attention of the block already received is computed. A step is hidden up to
//   cp_overlap of that block's attention time, 1/c of the rank's attention: within a node it
//   hides entirely, across nodes it may not.
// - all_gather (Llama 3, arXiv 2407.21783 §3.3.2; Transformer Engine's
//   AttnFuncWithCPAndKVAllGather, "KV all-gather between CP ranks is exposed"): an all-gather
//   of every rank's K and V per forward pass, and backward a second all-gather and a
//   reduce-scatter of their gradients, none hidden.
double LayerCpSeconds(const Symbols& x, const TrainingSpec& training, const ParallelConfig& config,
                      const ClusterSpec& cluster, double peak_flops,
                      const PerformanceParameters& params) {
  if (config.cp() == 1) return 0;
  const Link link = LinkForSpan(config.tp() * config.cp(), cluster, params);
  const double bytes = 2 * (x.s / x.c) * x.b * x.kv_width / x.t * 2;
  const double exchanges = ForwardPasses(config.recompute()) + 2;
  if (training.cp_comm_type() == CpCommType::kAllGather) {
    return exchanges * GatherOrScatterSeconds(x.c * bytes, x.c, link);
  }
  const double block = AttentionForwardSeconds(x, training, peak_flops, params) / x.c;
  const double exposed = std::max(0.0, SendRecvSeconds(bytes, link) - params.cp_overlap * block);
  return exchanges * (x.c - 1) * exposed;
}

// Parameters per GPU of the stage that holds the LM head (the last), as in the memory model,
// by the group that reduces their gradients: `data_parallel` over the d x c ranks (its layers,
// of an MoE layer the attention, norms, router and shared experts; the final norm and the LM
// head, plus the embedding when p = 1 and untied), `expert` over the expert data-parallel
// group (moe_memory.h, ExpertDataParallelSize) and `fp8_linear` of them in fp8 modules.
struct StageParameters {
  double data_parallel = 0;
  double expert = 0;
  double fp8_linear = 0;
};

StageParameters LastStageParameters(const Symbols& x, const ModelSpec& model,
                                    const ParallelConfig& config, const StageLayerCounts& last) {
  const double embeddings = x.p == 1 && !x.tied ? 2 * x.h * x.V : x.h * x.V;
  StageParameters params;
  params.data_parallel =
      (last.layers * x.layer_params - last.moe_layers * MlpParameters(x) + embeddings) / x.t + x.h;
  params.fp8_linear = Fp8LinearParameters(x, model, config, last);
  if (last.moe_layers > 0) {
    const int64_t moe_layers = static_cast<int64_t>(last.moe_layers);
    params.data_parallel += RouterParameters(model, moe_layers) +
                            SharedExpertParameters(model, config.dims(), moe_layers);
    params.expert = ExpertParameters(model, ExpertParallelismOf(config), moe_layers);
  }
  return params;
}

// The ranks that hold the same parameters and synchronise their gradients, as sharding splits
// them: `shard_ranks` ranks that each hold a 1/shard_ranks share of the sharded states (1
// without sharding) over `shard_link`, and `replicas` copies of that group over
// `replica_link` (more than 1 without sharding, or under hybrid sharding).
struct GradientGroups {
  double shard_ranks = 1;
  double replicas = 1;
  Link shard_link;
  Link replica_link;
};

// Seconds to synchronize the gradients of `params` parameters, `fp8_params` of them fp8
// weights, per step of `micro_batches` micro-batches, as often as DataParallelTrafficPerStep
// says: without sharding, all-reduces of the gradients over all the group's ranks; with it,
// reduce-scatters of the gradients (under hybrid sharding each followed by an all-reduce of
// the shard over the replicas) and all-gathers of the bf16 parameters (the fp8 ones in fp8
// with fp8_param_gather) over the shard ranks. 0 when one rank holds the parameters.
double GradientSyncSeconds(const TrainingSpec& training, DataParallelSharding sharding,
                           bool pipelined, double micro_batches, double params, double fp8_params,
                           const GradientGroups& groups) {
  const DataParallelTraffic traffic =
      DataParallelTrafficPerStep(training, sharding, pipelined, micro_batches);
  const double gradient_bytes = params * (training.fp32_gradients() ? 4 : 2);
  if (sharding == DataParallelSharding::kNone) {
    if (groups.replicas == 1) return 0;
    return traffic.gradient_reductions *
           AllReduceSeconds(gradient_bytes, groups.replicas, groups.replica_link);
  }
  const double parameter_bytes = training.fp8_param_gather() ? 2 * params - fp8_params : 2 * params;
  const double n = groups.shard_ranks;
  const double reduce = (n > 1 ? GatherOrScatterSeconds(gradient_bytes, n, groups.shard_link) : 0) +
                        (groups.replicas > 1 ? AllReduceSeconds(gradient_bytes / n, groups.replicas,
                                                                groups.replica_link)
                                             : 0);
  const double gather = n > 1 ? GatherOrScatterSeconds(parameter_bytes, n, groups.shard_link) : 0;
  return traffic.gradient_reductions * reduce + traffic.weight_gathers * gather;
}

// Exposed DP seconds per step: the gradients of the stage's parameters synchronized over the
// d x c ranks holding the same shard as the configuration's sharding says and, for an MoE
// model, the experts' over the expert data-parallel group (Megatron-LM reduces them from their
// own buffers, distributed_data_parallel.py), whose ranks the stage's t c d span as well.
double DpSeconds(const Symbols& x, const TrainingSpec& training, const ParallelConfig& config,
                 const ClusterSpec& cluster, const StageParameters& stage,
                 const PerformanceParameters& params) {
  const Link link = LinkForSpan(config.tp() * config.cp() * config.dp(), cluster, params);
  const double dense_fp8 = stage.fp8_linear - (stage.expert > 0 ? stage.expert : 0);
  const bool sharded = config.dp_sharding() != DataParallelSharding::kNone;
  GradientGroups dense;
  dense.shard_ranks = sharded ? config.dp_shard_ranks() * x.c : 1;
  dense.replicas = x.d * x.c / dense.shard_ranks;
  dense.shard_link =
      LinkForSpan(config.tp() * config.cp() * config.dp_shard_ranks(), cluster, params);
  dense.replica_link = link;
  const bool pipelined = config.pp() > 1;
  double seconds = GradientSyncSeconds(training, config.dp_sharding(), pipelined, x.m,
                                       stage.data_parallel, dense_fp8, dense);
  if (stage.expert > 0) {
    const double edp = ExpertDataParallelSize(config.dims(), ExpertParallelismOf(config));
    GradientGroups expert;
    expert.shard_ranks = sharded ? edp : 1;
    expert.replicas = edp / expert.shard_ranks;
    expert.shard_link = link;
    expert.replica_link = link;
    seconds += GradientSyncSeconds(training, config.dp_sharding(), pipelined, x.m, stage.expert,
                                   stage.expert, expert);
  }
  return seconds * (1 - params.dp_overlap);
}

// Exposed PP seconds per step: every micro-batch crosses each of the rank's v chunk
// boundaries forward (activations) and backward (their gradients): the sbh/(tc) values of
// 2 bytes a stage boundary carries with SP.
double PpSeconds(const Symbols& x, const ParallelConfig& config, const ClusterSpec& cluster,
                 const PerformanceParameters& params) {
  if (config.pp() == 1) return 0;
  const Link link =
      LinkForSpan(config.tp() * config.cp() * config.dp() * config.pp(), cluster, params);
  const double bytes = 2 * x.s * x.b * x.h / (x.t * x.c);
  return 2 * x.v * x.m * SendRecvSeconds(bytes, link) * (1 - params.pp_overlap);
}

// The Adam step is bound by HBM traffic: per local parameter it reads the gradient, reads and
// writes the fp32 master weight and both moments (24 bytes) and writes the bf16 weight (2).
// The distributed optimizer shards the stage's parameters over their data-parallel groups.
double OptimizerSeconds(const Symbols& x, const TrainingSpec& training,
                        const ParallelConfig& config, const ClusterSpec& cluster,
                        const StageParameters& stage, const PerformanceParameters& params) {
  double local_params = stage.data_parallel + stage.expert;
  if (ShardsOptimizerStates(config.dp_sharding())) {
    local_params = stage.data_parallel / (config.dp_shard_ranks() * x.c);
    if (stage.expert > 0) {
      local_params +=
          stage.expert / ExpertDataParallelSize(config.dims(), ExpertParallelismOf(config));
    }
  }
  const double bytes_per_param = (training.fp32_gradients() ? 4 : 2) + 24 + 2;
  return local_params * bytes_per_param /
         (cluster.gpu().hbm_bandwidth_gbps * kGiga * params.optimizer_hbm_efficiency);
}

}  // namespace

bool UsesFp8TensorCores(const GpuSpec& gpu, const TrainingSpec& training) {
  return training.fp8() && ArchitectureOf(gpu) == GpuArchitecture::kHopper;
}

double DensePeakTflops(const GpuSpec& gpu, const TrainingSpec& training) {
  return UsesFp8TensorCores(gpu, training) ? 2 * gpu.peak_bf16_tflops : gpu.peak_bf16_tflops;
}

double ModelFlopsPerStep(const ModelSpec& model, const TrainingSpec& training) {
  const double h = static_cast<double>(model.hidden_size());
  const double L = static_cast<double>(model.num_layers());
  const double a = static_cast<double>(model.num_attention_heads());
  const double k = static_cast<double>(model.num_kv_heads());
  const double d = static_cast<double>(model.head_dim());
  const double f = static_cast<double>(model.ffn_hidden_size());
  const double V = static_cast<double>(model.vocab_size());
  const double s = static_cast<double>(training.seq_len());
  const double gbs = static_cast<double>(training.global_batch_size());
  // a d / h and k d / h: 1 and k / a, exactly as doubles, when d = h / a.
  const double query_ratio = a * d / h;
  const double kv_ratio = k * d / h;
  // MLP widths a token passes through, summed over layers: f in a dense layer, k_r f_e + n_s f_s
  // in an MoE layer (0 MoE layers add nothing for a dense model).
  const MoeDimensions& moe = model.moe();
  const double moe_layers = static_cast<double>(model.MoeLayerCount());
  const double mlp_widths =
      (L - moe_layers) * f +
      moe_layers *
          (static_cast<double>(moe.router_top_k * moe.expert_ffn_hidden_size) +
           static_cast<double>(moe.num_shared_experts * moe.shared_expert_ffn_hidden_size));
  return gbs * s *
         (12 * L * h * h * (query_ratio + kv_ratio + query_ratio * s / h) +
          6 * model.MlpMatrices() * mlp_widths * h + 6 * V * h);
}

namespace {

// Seconds of one layer for one micro-batch by kind of work, forward and backward.
struct LayerSeconds {
  double compute = 0;
  double tp = 0;
  double cp = 0;
  double ep = 0;  // exposed dispatch and combine of an MoE layer

  double Total() const { return compute + tp + cp + ep; }
};

// The seconds of a stage's layers for one micro-batch: its dense layers' and MoE layers'.
LayerSeconds StageSeconds(const StageLayerCounts& stage, const LayerSeconds& dense,
                          const LayerSeconds& moe) {
  const double dense_layers = stage.layers - stage.moe_layers;
  LayerSeconds seconds;
  seconds.compute = dense_layers * dense.compute + stage.moe_layers * moe.compute;
  seconds.tp = dense_layers * dense.tp + stage.moe_layers * moe.tp;
  seconds.cp = dense_layers * dense.cp + stage.moe_layers * moe.cp;
  seconds.ep = stage.moe_layers * moe.ep;
  return seconds;
}

}  // namespace

PerformanceEstimate PredictPerformance(const ModelSpec& model, const TrainingSpec& training,
                                       const ClusterSpec& cluster, const ParallelConfig& config,
                                       const PerformanceParameters& params) {
  const Symbols x = MakeConfigSymbols(model, training, config);
  const GpuSpec& gpu = cluster.gpu();
  const double peak_flops = gpu.peak_bf16_tflops * kTera;
  const double gemm_peak_tflops = DensePeakTflops(gpu, training);
  LayerSeconds dense;
  dense.compute = LayerComputeSeconds(x, training, config.recompute(), /*with_mlp=*/true, gpu,
                                      peak_flops, gemm_peak_tflops * kTera, params);
  dense.tp = LayerTpSeconds(x, training, config, cluster, params);
  dense.cp = LayerCpSeconds(x, training, config, cluster, peak_flops, params);
  // An MoE layer: a dense layer's attention, its MoE block in place of the MLP, and half the
  // dense layer's TP collectives (with SP, which MoE needs at t > 1, the MLP's all-gather and
  // reduce-scatter become the dispatcher's) unless shared experts, a dense MLP over the
  // tensor group, keep them.
  LayerSeconds moe;
  if (model.is_moe()) {
    const MoeLayerSeconds block =
        PredictMoeLayerSeconds(model, training, config.dims(), ExpertParallelismOf(config),
                               MoeRoutingOf(training, /*dropless_load_margin=*/1.0), cluster,
                               peak_flops, gemm_peak_tflops * kTera, params);
    moe.compute = LayerComputeSeconds(x, training, config.recompute(), /*with_mlp=*/false, gpu,
                                      peak_flops, gemm_peak_tflops * kTera, params) +
                  block.Compute();
    moe.tp = model.moe().num_shared_experts > 0 ? dense.tp : dense.tp / 2;
    moe.cp = dense.cp;
    moe.ep = block.exposed_communication;
  }
  const double lm_head = LmHeadSeconds(x, peak_flops, params);
  // The pipeline runs at the pace of its slowest stage: the last (its layers and the LM head)
  // or, when the split is uneven or MoE layers are spread unevenly, the first or a middle one.
  const StageLayerCounts last_layers = StageLayerCountsOf(model, x.layout, config, config.pp() - 1);
  StageLayerCounts pace_layers = last_layers;
  LayerSeconds pace = StageSeconds(last_layers, dense, moe);
  bool last_paces = true;
  const auto consider = [&](int64_t stage) {
    const StageLayerCounts layers = StageLayerCountsOf(model, x.layout, config, stage);
    const LayerSeconds seconds = StageSeconds(layers, dense, moe);
    if (seconds.Total() > (last_paces ? pace.Total() + lm_head : pace.Total())) {
      pace_layers = layers;
      pace = seconds;
      last_paces = false;
    }
  };
  consider(0);
  if (config.pp() > 2) consider(1);
  // fp8's amax reductions run once per model chunk and micro-batch, whatever its layers.
  const double compute = (pace.compute + (last_paces ? lm_head : 0) +
                          (training.fp8() ? Fp8AmaxSeconds(x, config, cluster, params) : 0)) /
                         FrameworkComputeEfficiency(training, params);
  // 1F1B runs m micro-batch slots plus (p-1)/v slots of fill and drain (Narayanan et al. 2021).
  const double slot = compute + pace.tp + pace.cp + pace.ep;
  const double bubble_slots = (x.p - 1) / x.v;
  const StageParameters last_parameters = LastStageParameters(x, model, config, last_layers);

  PerformanceEstimate estimate;
  estimate.compute_seconds = x.m * compute;
  // fp8 weights are cast once per step, before the first micro-batch uses them.
  if (training.fp8()) {
    estimate.compute_seconds += Fp8WeightCastSeconds(
        training, Fp8LinearParameters(x, model, config, pace_layers), gpu, params);
  }
  estimate.tp_communication_seconds = x.m * pace.tp;
  estimate.cp_communication_seconds = x.m * pace.cp;
  estimate.ep_communication_seconds = x.m * pace.ep;
  estimate.pipeline_bubble_seconds = bubble_slots * slot;
  estimate.dp_communication_seconds =
      DpSeconds(x, training, config, cluster, last_parameters, params);
  estimate.pp_communication_seconds = PpSeconds(x, config, cluster, params);
  estimate.optimizer_seconds =
      OptimizerSeconds(x, training, config, cluster, last_parameters, params);
  estimate.step_time_seconds =
      estimate.compute_seconds + estimate.tp_communication_seconds +
      estimate.cp_communication_seconds + estimate.ep_communication_seconds +
      estimate.pipeline_bubble_seconds + estimate.dp_communication_seconds +
      estimate.pp_communication_seconds + estimate.optimizer_seconds;
  estimate.model_flops_per_step = ModelFlopsPerStep(model, training);
  estimate.tokens_per_second = x.gbs * x.s / estimate.step_time_seconds;
  const double gpus = static_cast<double>(cluster.world_size());
  estimate.model_tflops_per_gpu =
      estimate.model_flops_per_step / (estimate.step_time_seconds * gpus) / kTera;
  // MFU is against the dense peak of the precision the linears run in: the fp8 peak for fp8
  // runs on Hopper (NVIDIA's own tables quote fp8 runs against the bf16 peak; their MFU is
  // this one times 2).
  estimate.mfu_peak_tflops = gemm_peak_tflops;
  estimate.mfu_peak_is_fp8 = UsesFp8TensorCores(gpu, training);
  estimate.mfu = estimate.model_tflops_per_gpu / estimate.mfu_peak_tflops;
  estimate.relative_error = PredictionRelativeError(model, training, params);
  return estimate;
}

double PredictionRelativeError(const ModelSpec& model, const TrainingSpec& training,
                               const PerformanceParameters& params) {
  double error = params.relative_error;
  if (model.is_moe()) error = std::max(error, params.moe_relative_error);
  if (model.is_moe() && IsFlexDispatcher(training.moe_token_dispatcher())) {
    error = std::max(error, params.flex_relative_error);
  }
  if (training.framework() == Framework::kTorchTitan) {
    error = std::max(error, params.torchtitan_relative_error);
  }
  return error;
}

double OptimisticTflopsPerGpu(const PerformanceEstimate& estimate, double sigmas) {
  return estimate.model_tflops_per_gpu * std::exp(sigmas * estimate.relative_error);
}

}  // namespace paratune
