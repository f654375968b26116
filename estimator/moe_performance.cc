#include "estimator/moe_performance.h"

#include <algorithm>

#include "estimator/link_model.h"

namespace paratune {
namespace {

constexpr double kGiga = 1e9;

constexpr double kBf16Bytes = 2;
// --moe-router-dtype fp32 (NVIDIA's MoE recipes): router scores and probabilities in fp32.
constexpr double kRouterValueBytes = 4;

double D(int64_t value) { return static_cast<double>(value); }

double HbmSeconds(double bytes, const GpuSpec& gpu, const PerformanceParameters& params) {
  return bytes / (gpu.hbm_bandwidth_gbps * kGiga * params.moe_hbm_efficiency);
}

// Matrices of one MLP's fc1 (M - 1 of width f: gate and up when gated) and fc2 (one).
double Fc1Matrices(const ModelSpec& model) { return model.MlpMatrices() - 1; }

// Seconds of one expert or shared-expert GEMM of `flops` against `peak_flops`, the peak of the
// precision the experts run in: Transformer Engine's linears under fp8_autocast run at the
// fitted fp8 GEMM curve, as the dense linears do (performance_model.h), bf16 ones at the dense
// GEMM curve.
double ExpertGemmSeconds(double flops, const TrainingSpec& training, double peak_flops,
                         const PerformanceParameters& params) {
  return training.fp8() ? Fp8GemmSeconds(flops, peak_flops, params)
                        : GemmSeconds(flops, peak_flops, params);
}

}  // namespace

double RouterForwardFlops(const ModelSpec& model, double tokens) {
  return 2 * tokens * D(model.hidden_size()) * D(model.moe().num_experts);
}

double RoutedExpertForwardFlops(const ModelSpec& model, double tokens) {
  const MoeDimensions& moe = model.moe();
  return 2 * D(moe.router_top_k) * tokens * model.MlpMatrices() * D(moe.expert_ffn_hidden_size) *
         D(model.hidden_size());
}

double SharedExpertForwardFlops(const ModelSpec& model, double tokens) {
  const MoeDimensions& moe = model.moe();
  return 2 * tokens * D(moe.num_shared_experts) * model.MlpMatrices() *
         D(moe.shared_expert_ffn_hidden_size) * D(model.hidden_size());
}

double MegatronCoreFlopsPerToken(const ModelSpec& model, int64_t seq_len) {
  const double h = D(model.hidden_size());
  const double L = D(model.num_layers());
  const double a = D(model.num_attention_heads());
  const double k = D(model.num_kv_heads());
  const double d = D(model.head_dim());
  const double s = D(seq_len);
  const double moe_layers = D(model.MoeLayerCount());
  const MoeDimensions& moe = model.moe();
  // 3 (forward, data and weight gradients) x 2 (multiply and add) per weight and token.
  constexpr double kForwardBackwardFma = 6;
  const double attention = L * h * d * (2 * a + 2 * k) + L * s * a * d;
  const double mlp_widths =
      (L - moe_layers) * D(model.ffn_hidden_size()) +
      moe_layers * (D(moe.router_top_k) * D(moe.expert_ffn_hidden_size) +
                    D(moe.num_shared_experts) * D(moe.shared_expert_ffn_hidden_size));
  const double logits = h * D(model.vocab_size());
  return kForwardBackwardFma * (attention + h * model.MlpMatrices() * mlp_widths + logits);
}

double MegatronCoreFlopsPerStep(const ModelSpec& model, const TrainingSpec& training) {
  return D(training.global_batch_size()) * D(training.seq_len()) *
         MegatronCoreFlopsPerToken(model, training.seq_len());
}

double TokensPerLocalExpert(const ModelSpec& model, const TrainingSpec& training,
                            const ParallelDims& dims, const ExpertParallelism& expert,
                            const MoeRouting& routing) {
  if (!model.is_moe()) return 0;
  const double local_experts = D(model.moe().num_experts) / D(expert.ep);
  return RoutedTokensPerRank(model, training, dims, expert, routing) / local_experts;
}

double GroupedGemmEfficiency(double tokens_per_expert, const TrainingSpec& training,
                             const PerformanceParameters& params) {
  const double ceiling =
      training.fp8() ? params.fp8_gemm_efficiency_max : params.gemm_efficiency_max;
  return ceiling * tokens_per_expert /
         (tokens_per_expert + params.grouped_gemm_half_efficiency_tokens);
}

double GroupedGemmForwardSeconds(const ModelSpec& model, const TrainingSpec& training,
                                 const ParallelDims& dims, const ExpertParallelism& expert,
                                 const MoeRouting& routing, double peak_flops,
                                 const PerformanceParameters& params) {
  if (!model.is_moe()) return 0;
  const MoeDimensions& moe = model.moe();
  const double received = RoutedTokensPerRank(model, training, dims, expert, routing);
  const double flops = 2 * received * model.MlpMatrices() * D(moe.expert_ffn_hidden_size) *
                       D(model.hidden_size()) / D(expert.etp);
  const double efficiency = GroupedGemmEfficiency(
      TokensPerLocalExpert(model, training, dims, expert, routing), training, params);
  return params.expert_load_imbalance * flops / (peak_flops * efficiency);
}

double SequentialExpertsForwardSeconds(const ModelSpec& model, const TrainingSpec& training,
                                       const ParallelDims& dims, const ExpertParallelism& expert,
                                       const MoeRouting& routing, double peak_flops,
                                       const PerformanceParameters& params) {
  if (!model.is_moe()) return 0;
  const MoeDimensions& moe = model.moe();
  const double tokens = TokensPerLocalExpert(model, training, dims, expert, routing);
  const double inner = D(moe.expert_ffn_hidden_size) / D(expert.etp);
  const double h = D(model.hidden_size());
  const double fc1 = 2 * tokens * h * Fc1Matrices(model) * inner;
  const double fc2 = 2 * tokens * inner * h;
  const double local_experts = D(moe.num_experts) / D(expert.ep);
  return params.expert_load_imbalance * local_experts *
         (ExpertGemmSeconds(fc1, training, peak_flops, params) +
          ExpertGemmSeconds(fc2, training, peak_flops, params));
}

double SharedExpertForwardSeconds(const ModelSpec& model, const TrainingSpec& training,
                                  const ParallelDims& dims, double peak_flops,
                                  const PerformanceParameters& params) {
  const MoeDimensions& moe = model.moe();
  if (moe.num_shared_experts == 0) return 0;
  // SP gathers the s b / c tokens before fc1; each rank holds f / t of the inner width.
  const double tokens = MoeTokensPerRank(training, dims) * D(dims.tp);
  const double inner =
      D(moe.num_shared_experts) * D(moe.shared_expert_ffn_hidden_size) / D(dims.tp);
  const double h = D(model.hidden_size());
  const double fc1 = 2 * tokens * h * Fc1Matrices(model) * inner;
  const double fc2 = 2 * tokens * inner * h;
  return ExpertGemmSeconds(fc1, training, peak_flops, params) +
         ExpertGemmSeconds(fc2, training, peak_flops, params);
}

double ExpertFp8CastSeconds(const ModelSpec& model, const TrainingSpec& training,
                            const ParallelDims& dims, const ExpertParallelism& expert,
                            const MoeRouting& routing, const GpuSpec& gpu,
                            const PerformanceParameters& params) {
  if (!model.is_moe() || !training.fp8()) return 0;
  const MoeDimensions& moe = model.moe();
  const double h = D(model.hidden_size());
  const double fc1_matrices = Fc1Matrices(model);
  // Routed experts: fc1's input h and fc2's input f_e / etp forward; fc2's output gradient h
  // and fc1's (M - 1) f_e / etp backward, on the N tokens the rank's experts receive.
  const double routed_tokens = RoutedTokensPerRank(model, training, dims, expert, routing);
  const double expert_width = D(moe.expert_ffn_hidden_size) / D(expert.etp);
  double inputs = routed_tokens * (h + expert_width);
  double output_gradients = routed_tokens * (h + fc1_matrices * expert_width);
  // Shared experts: a dense MLP of width n_s f_s over tp, its fc1 input SP-gathered.
  if (moe.num_shared_experts > 0) {
    const double tokens = MoeTokensPerRank(training, dims) * D(dims.tp);
    const double shared_width =
        D(moe.num_shared_experts) * D(moe.shared_expert_ffn_hidden_size) / D(dims.tp);
    inputs += tokens * (h + shared_width);
    output_gradients += tokens * (h + fc1_matrices * shared_width);
  }
  // Read 2 bytes, write the fp8 value and its fp8 transpose.
  constexpr double kCastBytesPerValue = 4;
  const double forwards = dims.recompute == Recompute::kFull ? 2 : 1;
  return kCastBytesPerValue * (forwards * inputs + output_gradients) /
         (gpu.hbm_bandwidth_gbps * kGiga * params.fp8_cast_hbm_efficiency);
}

double RouterGemmForwardSeconds(const ModelSpec& model, const TrainingSpec& training,
                                const ParallelDims& dims, double peak_flops,
                                const PerformanceParameters& params) {
  if (!model.is_moe()) return 0;
  return GemmSeconds(RouterForwardFlops(model, MoeTokensPerRank(training, dims)), peak_flops,
                     params);
}

double RouterTopKForwardSeconds(const ModelSpec& model, const TrainingSpec& training,
                                const ParallelDims& dims, const GpuSpec& gpu,
                                const PerformanceParameters& params) {
  // Score function (read logits, write scores), top-k (read scores), load-balancing scores
  // (read logits, write scores): five passes over T x E fp32 values.
  constexpr double kScorePasses = 5;
  return HbmSeconds(kScorePasses * kRouterValueBytes * MoeTokensPerRank(training, dims) *
                        D(model.moe().num_experts),
                    gpu, params);
}

double PermutationForwardSeconds(const ModelSpec& model, const TrainingSpec& training,
                                 const ParallelDims& dims, const ExpertParallelism& expert,
                                 const MoeRouting& routing, const GpuSpec& gpu,
                                 const PerformanceParameters& params) {
  if (!model.is_moe()) return 0;
  const double received = RoutedTokensPerRank(model, training, dims, expert, routing);
  double copied_tokens;
  if (routing.dispatcher == TokenDispatcher::kAllGather || IsFlexDispatcher(routing.dispatcher)) {
    copied_tokens = 2 * received;
  } else {
    const bool sorted = model.moe().num_experts / expert.ep > 1;
    copied_tokens =
        2 * SentTokensPerRank(model, training, dims, routing) + (sorted ? 2 * received : 0);
  }
  // Each copy reads and writes the token's h bf16 values.
  const double bytes = copied_tokens * 2 * kBf16Bytes * D(model.hidden_size());
  return HbmSeconds(bytes, gpu, params);
}

double AllToAllBytesLeavingRank(const ModelSpec& model, const TrainingSpec& training,
                                const ParallelDims& dims, const ExpertParallelism& expert,
                                const MoeRouting& routing) {
  if (!model.is_moe() || expert.ep == 1) return 0;
  const double ep = D(expert.ep);
  return SentTokensPerRank(model, training, dims, routing) * kBf16Bytes * D(model.hidden_size()) *
         (ep - 1) / ep;
}

double AllToAllForwardSeconds(const ModelSpec& model, const TrainingSpec& training,
                              const ParallelDims& dims, const ExpertParallelism& expert,
                              const MoeRouting& routing, const ClusterSpec& cluster,
                              const PerformanceParameters& params) {
  if (!model.is_moe()) return 0;
  double seconds = 0;
  if (expert.ep > 1) {
    const double sent = SentTokensPerRank(model, training, dims, routing);
    const double token_bytes = sent * kBf16Bytes * D(model.hidden_size());
    const double probability_bytes = sent * kRouterValueBytes;
    const auto all_to_all = [&](double bytes) {
      return AllToAllSeconds(bytes, expert.ep, expert.etp * expert.ep, cluster, params,
                             params.all_to_all_network_efficiency);
    };
    // Dispatch: tokens and probabilities; combine: tokens.
    seconds += 2 * all_to_all(token_bytes) + all_to_all(probability_bytes);
  }
  if (expert.etp > 1) {
    const Link link = LinkForSpan(expert.etp, cluster, params);
    const double gathered_bytes = RoutedTokensPerRank(model, training, dims, expert, routing) *
                                  kBf16Bytes * D(model.hidden_size());
    // All-gather of the received tokens, reduce-scatter of the experts' output.
    seconds += 2 * GatherOrScatterSeconds(gathered_bytes, D(expert.etp), link);
  }
  return seconds;
}

double AllGatherDispatchForwardSeconds(const ModelSpec& model, const TrainingSpec& training,
                                       const ParallelDims& dims, const ExpertParallelism& expert,
                                       const ClusterSpec& cluster,
                                       const PerformanceParameters& params) {
  const int64_t group = expert.etp * expert.ep;
  if (!model.is_moe() || group == 1) return 0;
  const Link link = LinkForSpan(group, cluster, params);
  const double n = D(group);
  const double gathered = MoeTokensPerRank(training, dims) * n;
  const double h = D(model.hidden_size());
  const double experts = D(model.moe().num_experts);
  constexpr double kRoutingMapBytes = 1;
  const double dispatch_bytes =
      gathered * (kBf16Bytes * h + kRouterValueBytes * experts + kRoutingMapBytes * experts);
  const double combine_bytes = gathered * kRouterValueBytes * h;
  // The probabilities and routing map are gathered apart from the tokens: three all-gathers.
  return GatherOrScatterSeconds(dispatch_bytes, n, link) + 2 * link.latency_seconds +
         GatherOrScatterSeconds(combine_bytes, n, link);
}

double ExpertShareHitProbability(double experts, double held, double k) {
  double none = 1;
  for (double i = 0; i < k; ++i) none *= std::max(0.0, (experts - held - i) / (experts - i));
  return 1 - none;
}

double FlexDispatchForwardSeconds(const ModelSpec& model, const TrainingSpec& training,
                                  const ParallelDims& dims, const ExpertParallelism& expert,
                                  const MoeRouting& routing, const ClusterSpec& cluster,
                                  const PerformanceParameters& params) {
  const int64_t group = expert.etp * expert.ep;
  if (!model.is_moe() || group == 1) return 0;
  const GpuSpec& gpu = cluster.gpu();
  const double experts = D(model.moe().num_experts);
  const double k = D(model.moe().router_top_k);
  const double per_node = D(std::min(group, cluster.gpus_per_node()));
  const double nodes = D(group) / per_node;
  const double rank_hit = ExpertShareHitProbability(experts, experts / D(expert.ep), k);
  const double node_hit =
      ExpertShareHitProbability(experts, experts * per_node / (D(expert.etp) * D(expert.ep)), k);
  const double tokens = MoeTokensPerRank(training, dims);
  const double kept =
      std::min(1.0, SentTokensPerRank(model, training, dims, routing) / (tokens * k));
  // DeepEP's routing metadata per token: k int64 expert indices and k fp32 probabilities.
  constexpr double kMetadataBytesPerExpert = 8 + kRouterValueBytes;
  const double token_bytes =
      tokens * kept * (kBf16Bytes * D(model.hidden_size()) + kMetadataBytesPerExpert * k);
  const double nvlink_seconds = token_bytes * (per_node - 1) * rank_hit * nodes /
                                (gpu.nvlink_bandwidth_gbps * kGiga * params.flex_link_efficiency);
  double one_way = params.nvlink_latency_seconds + nvlink_seconds;
  if (nodes > 1) {
    const double network_seconds =
        token_bytes * (nodes - 1) * node_hit /
        (gpu.network_bandwidth_gbps * kGiga * params.flex_link_efficiency);
    one_way = params.network_latency_seconds + std::max(nvlink_seconds, network_seconds);
  }
  // Dispatch and combine.
  return 2 * one_way;
}

// The forward communication of routing.dispatcher.
double DispatcherForwardSeconds(const ModelSpec& model, const TrainingSpec& training,
                                const ParallelDims& dims, const ExpertParallelism& expert,
                                const MoeRouting& routing, const ClusterSpec& cluster,
                                const PerformanceParameters& params) {
  switch (routing.dispatcher) {
    case TokenDispatcher::kAllGather:
      return AllGatherDispatchForwardSeconds(model, training, dims, expert, cluster, params);
    case TokenDispatcher::kFlexDeepEp:
    case TokenDispatcher::kFlexHybridEp:
      return FlexDispatchForwardSeconds(model, training, dims, expert, routing, cluster, params);
    case TokenDispatcher::kAllToAll:
      break;
  }
  return AllToAllForwardSeconds(model, training, dims, expert, routing, cluster, params);
}

bool ExpertParallelOverlapApplies(const ModelSpec& model, const TrainingSpec& training,
                                  const ParallelDims& dims) {
  return model.is_moe() && training.moe_expert_parallel_overlap() && dims.ep > 1 &&
         dims.recompute != Recompute::kFull && (dims.pp == 1 || dims.virtual_pipeline > 1);
}

bool SharedExpertOverlapApplies(const ModelSpec& model, const TrainingSpec& training) {
  return model.is_moe() && model.moe().num_shared_experts > 0 &&
         training.moe_shared_expert_overlap();
}

MoeLayerSeconds PredictMoeLayerSeconds(const ModelSpec& model, const TrainingSpec& training,
                                       const ParallelDims& dims, const ExpertParallelism& expert,
                                       const MoeRouting& routing, const ClusterSpec& cluster,
                                       double peak_flops, double expert_peak_flops,
                                       const PerformanceParameters& params) {
  MoeLayerSeconds seconds;
  if (!model.is_moe()) return seconds;
  const GpuSpec& gpu = cluster.gpu();
  const double forwards = dims.recompute == Recompute::kFull ? 2 : 1;
  // GEMMs: forward, data and weight gradients; memory-bound kernels and communication: the
  // forward and its mirror image in backward.
  const double gemm_passes = forwards + 2;
  const double copy_passes = forwards + 1;
  seconds.router =
      gemm_passes * RouterGemmForwardSeconds(model, training, dims, peak_flops, params) +
      copy_passes * RouterTopKForwardSeconds(model, training, dims, gpu, params);
  seconds.permutation =
      copy_passes * PermutationForwardSeconds(model, training, dims, expert, routing, gpu, params);
  // Grouping batches the local experts' GEMMs into one kernel; it is never slower than
  // running them one by one, whatever the fitted curves say.
  const double grouped =
      GroupedGemmForwardSeconds(model, training, dims, expert, routing, expert_peak_flops, params);
  seconds.routed_experts =
      gemm_passes * (training.moe_grouped_gemm()
                         ? grouped
                         : std::max(grouped, SequentialExpertsForwardSeconds(
                                                 model, training, dims, expert, routing,
                                                 expert_peak_flops, params)));
  seconds.shared_experts =
      gemm_passes * SharedExpertForwardSeconds(model, training, dims, expert_peak_flops, params);
  seconds.fp8_casts = ExpertFp8CastSeconds(model, training, dims, expert, routing, gpu, params);
  seconds.communication = copy_passes * DispatcherForwardSeconds(model, training, dims, expert,
                                                                 routing, cluster, params);
  seconds.exposed_communication =
      seconds.communication *
      (ExpertParallelOverlapApplies(model, training, dims) ? 1 - params.ep_comm_overlap : 1);
  if (SharedExpertOverlapApplies(model, training)) {
    seconds.exposed_communication =
        std::max(0.0, seconds.exposed_communication - seconds.shared_experts);
  }
  return seconds;
}

}  // namespace paratune
