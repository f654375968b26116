#include "estimator/moe_performance.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "estimator/link_model.h"
#include "estimator/performance_model.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

ModelSpec Preset(const std::string& name) {
  absl::StatusOr<ModelSpec> model = FindModelPreset(name);
  EXPECT_TRUE(model.ok()) << model.status();
  return *model;
}

TrainingSpec Training(int64_t global_batch_size, int64_t seq_len) {
  TrainingOptions options;
  options.global_batch_size = global_batch_size;
  options.seq_len = seq_len;
  absl::StatusOr<TrainingSpec> training = TrainingSpec::Create(options);
  EXPECT_TRUE(training.ok()) << training.status();
  return *training;
}

TrainingSpec Fp8(const TrainingSpec& training) {
  TrainingOptions options = training.options();
  options.fp8 = true;
  absl::StatusOr<TrainingSpec> fp8 = TrainingSpec::Create(options);
  EXPECT_TRUE(fp8.ok()) << fp8.status();
  return *fp8;
}

ClusterSpec H100Nodes(int64_t nodes) {
  absl::StatusOr<ClusterSpec> cluster = ClusterSpec::Create(*FindGpuPreset("h100-80gb"), nodes, 8);
  EXPECT_TRUE(cluster.ok()) << cluster.status();
  return *cluster;
}

constexpr double kPeakFlops = 989e12;

TEST(MoeForwardFlopsTest, RouterRoutedAndSharedExpertsAreTheirGemms) {
  // Llama 4 Scout: h 5120, E 16, top-1, f_e 8192, one shared expert of 8192, gated.
  const ModelSpec scout = Preset("llama4-scout");
  const double tokens = 1000;
  EXPECT_DOUBLE_EQ(RouterForwardFlops(scout, tokens), 2 * tokens * 5120 * 16);
  EXPECT_DOUBLE_EQ(RoutedExpertForwardFlops(scout, tokens), 2 * 1 * tokens * 3 * 8192 * 5120.0);
  EXPECT_DOUBLE_EQ(SharedExpertForwardFlops(scout, tokens), 2 * tokens * 1 * 3 * 8192 * 5120.0);
  // Qwen3-30B-A3B: E 128, top-8, f_e 768, no shared expert.
  const ModelSpec qwen = Preset("qwen3-30b-a3b");
  EXPECT_DOUBLE_EQ(RoutedExpertForwardFlops(qwen, tokens), 2 * 8 * tokens * 3 * 768 * 2048.0);
  EXPECT_EQ(SharedExpertForwardFlops(qwen, tokens), 0);
}

TEST(MegatronCoreFlopsTest, Qwen3ThirtyBWrittenOut) {
  // h 2048, L 48, a 32, k 4, d 128, V 151936, every layer MoE with top-8 experts of 768.
  const double h = 2048, L = 48, a = 32, k = 4, d = 128, V = 151936, s = 4096;
  const double expected =
      6 * (L * h * d * (2 * a + 2 * k) + L * s * a * d + h * 3 * L * 8 * 768 + h * V);
  EXPECT_DOUBLE_EQ(MegatronCoreFlopsPerToken(Preset("qwen3-30b-a3b"), 4096), expected);
  const TrainingSpec training = Training(512, 4096);
  EXPECT_DOUBLE_EQ(MegatronCoreFlopsPerStep(Preset("qwen3-30b-a3b"), training),
                   512 * 4096 * expected);
}

TEST(MegatronCoreFlopsTest, DenseModelDiffersFromThePre2025ConventionOnlyInTheCausalHalving) {
  // Llama 3.1 8B has d = h / a: the token-linear terms agree and the attention core is
  // 6 L s h per token here against 12 L s h in ModelFlopsPerStep.
  const ModelSpec llama = Preset("llama3.1-8b");
  const TrainingSpec training = Training(128, 8192);
  const double h = static_cast<double>(llama.hidden_size());
  const double L = static_cast<double>(llama.num_layers());
  const double tokens = 128.0 * 8192;
  EXPECT_NEAR(MegatronCoreFlopsPerStep(llama, training),
              ModelFlopsPerStep(llama, training) - tokens * 6 * L * 8192 * h,
              1e-9 * ModelFlopsPerStep(llama, training));
}

// data/measured/megatron_bridge_moe_h100.csv (shared/data/measured/): Megatron-Bridge's
// published model TFLOP/s per GPU over tokens/s per GPU is its FLOPs per token.
struct PublishedMoeRun {
  const char* model;
  double tokens_per_s_per_gpu;
  double model_tflops_per_gpu;
};

TEST(MegatronCoreFlopsTest, ReproducesMegatronBridgeModelTflops) {
  const PublishedMoeRun runs[] = {
      {"qwen3-30b-a3b", 5275, 121},    // 25.11, FP8-CS, 16 GPUs
      {"qwen3-30b-a3b", 10494, 241},   // 25.09, 16 GPUs
      {"qwen3-235b-a22b", 1204, 178},  // 25.09, 256 GPUs
  };
  for (const PublishedMoeRun& run : runs) {
    const double tflops =
        run.tokens_per_s_per_gpu * MegatronCoreFlopsPerToken(Preset(run.model), 4096) / 1e12;
    EXPECT_NEAR(tflops / run.model_tflops_per_gpu, 1, 0.03)
        << run.model << " at " << run.tokens_per_s_per_gpu << " tokens/s: " << tflops;
  }
}

TEST(TokensPerLocalExpertTest, RoutedCopiesOfTheDispatcherGroupOverTheExperts) {
  // Qwen3-235B-A22B as Megatron-Bridge runs it: tp 2, ep 32; T = 4096 / 2 tokens per rank.
  const ModelSpec model = Preset("qwen3-235b-a22b");
  const TrainingSpec training = Training(2048, 4096);
  const ParallelDims dims = MakeParallelDims(16, 2, 8, 1, /*micro_batch=*/1);
  MoeRouting routing;
  EXPECT_DOUBLE_EQ(TokensPerLocalExpert(model, training, dims, {32, 1}, routing),
                   2048.0 * 8 * 32 / 128);
  EXPECT_DOUBLE_EQ(TokensPerLocalExpert(model, training, dims, {8, 2}, routing),
                   2048.0 * 8 * 2 * 8 / 128);
  routing.dropless_load_margin = 1.5;
  EXPECT_DOUBLE_EQ(TokensPerLocalExpert(model, training, dims, {32, 1}, routing),
                   1.5 * 2048.0 * 8 * 32 / 128);
}

TEST(GroupedGemmTest, EfficiencyIsHalfThePrecisionsDenseCeilingAtTheHalfPoint) {
  PerformanceParameters params;
  params.gemm_efficiency_max = 0.7;
  params.fp8_gemm_efficiency_max = 0.5;
  const TrainingSpec training = Training(512, 4096);
  const double half = params.grouped_gemm_half_efficiency_tokens;
  EXPECT_DOUBLE_EQ(GroupedGemmEfficiency(half, training, params), 0.7 / 2);
  EXPECT_DOUBLE_EQ(GroupedGemmEfficiency(half, Fp8(training), params), 0.5 / 2);
  EXPECT_LT(GroupedGemmEfficiency(64, training, params),
            GroupedGemmEfficiency(4096, training, params));
  EXPECT_LT(GroupedGemmEfficiency(1e9, training, params), 0.7);
}

TEST(GroupedGemmTest, SecondsAreTheRanksExpertFlopsAtTheTokensPerExpertEfficiency) {
  const ModelSpec model = Preset("qwen3-30b-a3b");
  const TrainingSpec training = Training(512, 4096);
  const ParallelDims dims = MakeParallelDims(8, 1, 2, 1, /*micro_batch=*/2);
  const ExpertParallelism expert{8, 1};
  const MoeRouting routing;
  PerformanceParameters params;
  // T = 8192 tokens, N = 8 T received, 16 local experts of N / 16 tokens each.
  const double received = 8 * 8192.0;
  const double per_expert = received / 16;
  const double flops = 2 * received * 3 * 768 * 2048;
  const double balanced =
      flops / (kPeakFlops * GroupedGemmEfficiency(per_expert, training, params));
  EXPECT_DOUBLE_EQ(
      GroupedGemmForwardSeconds(model, training, dims, expert, routing, kPeakFlops, params),
      balanced);
  params.expert_load_imbalance = 1.3;
  EXPECT_DOUBLE_EQ(
      GroupedGemmForwardSeconds(model, training, dims, expert, routing, kPeakFlops, params),
      1.3 * balanced);
}

TEST(SharedExpertTest, GemmsAtTheCurveOfTheirPrecision) {
  // Llama 4 Scout, tp 4: a shared expert of 8192 split over 4 ranks on the s b / c = 8192
  // gathered tokens.
  const ModelSpec model = Preset("llama4-scout");
  const TrainingSpec training = Training(256, 8192);
  const ParallelDims dims = MakeParallelDims(2, 4, 1, 1, /*micro_batch=*/1);
  const PerformanceParameters params;
  const double fc1 = 2 * 8192.0 * 5120 * 2 * 2048;
  const double fc2 = 2 * 8192.0 * 2048 * 5120;
  EXPECT_DOUBLE_EQ(SharedExpertForwardSeconds(model, training, dims, kPeakFlops, params),
                   GemmSeconds(fc1, kPeakFlops, params) + GemmSeconds(fc2, kPeakFlops, params));
  // fp8: the fitted fp8 GEMM curve against the fp8 peak, as the dense linears.
  EXPECT_DOUBLE_EQ(
      SharedExpertForwardSeconds(model, Fp8(training), dims, 2 * kPeakFlops, params),
      Fp8GemmSeconds(fc1, 2 * kPeakFlops, params) + Fp8GemmSeconds(fc2, 2 * kPeakFlops, params));
}

TEST(ExpertFp8CastTest, InputsEveryForwardOutputGradientsOnceAtTheCastHbmEfficiency) {
  // Llama 4 Maverick as dgxc-benchmarking runs it on H100: tp 4, ep 128, etp 4, s 8192, top-1
  // with capacity factor 1 padded: N = E etp ceil(T k / E) = 128 x 4 x 16 routed tokens.
  const ModelSpec model = Preset("llama4-maverick");
  const TrainingSpec bf16 = Training(1024, 8192);
  ParallelDims dims = MakeParallelDims(128, 4, 1, 1, /*micro_batch=*/1);
  const ExpertParallelism expert{128, 4};
  MoeRouting routing;
  routing.capacity_factor = 1.0;
  const GpuSpec gpu = *FindGpuPreset("h100-80gb");
  const PerformanceParameters params;
  EXPECT_EQ(ExpertFp8CastSeconds(model, bf16, dims, expert, routing, gpu, params), 0);

  const TrainingSpec fp8 = Fp8(bf16);
  const double routed = 128.0 * 4 * 16;
  ASSERT_DOUBLE_EQ(RoutedTokensPerRank(model, fp8, dims, expert, routing), routed);
  const double h = 5120, expert_width = 8192.0 / 4, shared_width = 8192.0 / 4, tokens = 8192;
  const double inputs = routed * (h + expert_width) + tokens * (h + shared_width);
  const double gradients = routed * (h + 2 * expert_width) + tokens * (h + 2 * shared_width);
  const double hbm = gpu.hbm_bandwidth_gbps * 1e9 * params.fp8_cast_hbm_efficiency;
  EXPECT_DOUBLE_EQ(ExpertFp8CastSeconds(model, fp8, dims, expert, routing, gpu, params),
                   4 * (inputs + gradients) / hbm);
  // Full recompute casts the inputs again.
  dims.recompute = Recompute::kFull;
  EXPECT_DOUBLE_EQ(ExpertFp8CastSeconds(model, fp8, dims, expert, routing, gpu, params),
                   4 * (2 * inputs + gradients) / hbm);
  // Part of the layer's compute.
  const MoeLayerSeconds layer =
      PredictMoeLayerSeconds(model, fp8, dims, expert, routing, *ClusterSpec::Create(gpu, 64, 8),
                             kPeakFlops, 2 * kPeakFlops, params);
  EXPECT_DOUBLE_EQ(layer.fp8_casts, 4 * (2 * inputs + gradients) / hbm);
  EXPECT_DOUBLE_EQ(layer.Compute(), layer.router + layer.permutation + layer.routed_experts +
                                        layer.shared_experts + layer.fp8_casts);
}

TEST(PermutationTest, PermuteUnpermuteAndTheSortsByExpertMoveTokenCopies) {
  const ModelSpec model = Preset("qwen3-30b-a3b");
  const TrainingSpec training = Training(512, 4096);
  const ParallelDims dims = MakeParallelDims(8, 1, 2, 1, /*micro_batch=*/1);
  const ClusterSpec cluster = H100Nodes(2);
  const GpuSpec& gpu = cluster.gpu();
  const PerformanceParameters params;
  const double hbm = gpu.hbm_bandwidth_gbps * 1e9 * params.moe_hbm_efficiency;
  const double copy_bytes = 2 * 2 * 2048;  // read and write h bf16 values
  const double sent = 4096.0 * 8;
  MoeRouting routing;
  // ep 8: permute and unpermute the sent copies, sort the received ones there and back.
  EXPECT_DOUBLE_EQ(PermutationForwardSeconds(model, training, dims, {8, 1}, routing, gpu, params),
                   (2 * sent + 2 * sent) * copy_bytes / hbm);
  // ep 1: the 128 local experts' tokens are still sorted by expert and back.
  EXPECT_DOUBLE_EQ(PermutationForwardSeconds(model, training, dims, {1, 1}, routing, gpu, params),
                   4 * sent * copy_bytes / hbm);
  // Mixtral 8x7B at ep 8: one local expert, nothing to sort; S = 2 T copies of h = 4096.
  EXPECT_DOUBLE_EQ(PermutationForwardSeconds(Preset("mixtral-8x7b"), training, dims, {8, 1},
                                             routing, gpu, params),
                   2 * (4096.0 * 2) * (2 * 2 * 4096) / hbm);
  routing.dispatcher = TokenDispatcher::kAllGather;
  EXPECT_DOUBLE_EQ(PermutationForwardSeconds(model, training, dims, {8, 1}, routing, gpu, params),
                   2 * sent * copy_bytes / hbm);
  // Flex permutes into its send buffers inside the dispatch kernel: only the sorts remain.
  routing.dispatcher = TokenDispatcher::kFlexDeepEp;
  EXPECT_DOUBLE_EQ(PermutationForwardSeconds(model, training, dims, {8, 1}, routing, gpu, params),
                   2 * sent * copy_bytes / hbm);
}

TEST(FlexDispatchTest, HitProbabilityIsTheHypergeometricChanceOfAnyHeldExpert) {
  EXPECT_DOUBLE_EQ(ExpertShareHitProbability(128, 128, 8), 1);
  EXPECT_DOUBLE_EQ(ExpertShareHitProbability(128, 0, 8), 0);
  // One held expert of 8, top-2: 1 - (7/8)(6/7) = 1/4.
  EXPECT_DOUBLE_EQ(ExpertShareHitProbability(8, 1, 2), 0.25);
  // Holding more experts than the others leave: every draw of k hits one.
  EXPECT_DOUBLE_EQ(ExpertShareHitProbability(8, 7, 2), 1);
}

TEST(FlexDispatchTest, OneCopyPerRankOnNvLinkOnePerNodeOnTheNetwork) {
  const ModelSpec model = Preset("qwen3-30b-a3b");  // E 128, top-8, h 2048
  TrainingOptions options = Training(512, 4096).options();
  options.moe_token_dispatcher = TokenDispatcher::kFlexHybridEp;
  const TrainingSpec training = *TrainingSpec::Create(options);
  const ParallelDims dims = MakeParallelDims(16, 1, 1, 1, /*micro_batch=*/1);
  const ClusterSpec cluster = H100Nodes(2);
  const GpuSpec& gpu = cluster.gpu();
  const PerformanceParameters params;
  MoeRouting routing;
  routing.dispatcher = TokenDispatcher::kFlexHybridEp;
  const double token_bytes = 4096.0 * (2 * 2048 + 12 * 8);
  const double nvlink = gpu.nvlink_bandwidth_gbps * 1e9 * params.flex_link_efficiency;
  const double network = gpu.network_bandwidth_gbps * 1e9 * params.flex_link_efficiency;
  // ep 8 on one node: each token to the 7 other ranks that hold one of its experts.
  const double rank_of_8 = ExpertShareHitProbability(128, 16, 8);
  EXPECT_DOUBLE_EQ(
      FlexDispatchForwardSeconds(model, training, dims, {8, 1}, routing, cluster, params),
      2 * (params.nvlink_latency_seconds + token_bytes * 7 * rank_of_8 / nvlink));
  // ep 16 over two nodes: once to the other node over the network (64 of its experts), and
  // over NVLink to its own node's ranks and, forwarded, to the other node's.
  const double rank_of_16 = ExpertShareHitProbability(128, 8, 8);
  const double node = ExpertShareHitProbability(128, 64, 8);
  const double nvlink_seconds = token_bytes * 7 * rank_of_16 * 2 / nvlink;
  const double network_seconds = token_bytes * node / network;
  EXPECT_DOUBLE_EQ(
      FlexDispatchForwardSeconds(model, training, dims, {16, 1}, routing, cluster, params),
      2 * (params.network_latency_seconds + std::max(nvlink_seconds, network_seconds)));
  // Fewer bytes than the all-to-all's k copies per token on the same layout.
  routing.dispatcher = TokenDispatcher::kAllToAll;
  EXPECT_LT(FlexDispatchForwardSeconds(model, training, dims, {16, 1}, routing, cluster, params),
            AllToAllForwardSeconds(model, training, dims, {16, 1}, routing, cluster, params));
  EXPECT_EQ(FlexDispatchForwardSeconds(model, training, dims, {1, 1}, routing, cluster, params), 0);
}

TEST(AllToAllTest, BytesLeavingTheRankAreTheRoutedCopiesNotStayingHome) {
  const ModelSpec model = Preset("qwen3-30b-a3b");
  const TrainingSpec training = Training(512, 4096);
  const ParallelDims dims = MakeParallelDims(8, 1, 2, 1, /*micro_batch=*/1);
  const MoeRouting routing;
  EXPECT_DOUBLE_EQ(AllToAllBytesLeavingRank(model, training, dims, {8, 1}, routing),
                   4096.0 * 8 * 2 * 2048 * 7 / 8);
  EXPECT_EQ(AllToAllBytesLeavingRank(model, training, dims, {1, 1}, routing), 0);
}

TEST(AllToAllTest, InsideANodeOnNvLinkAcrossNodesOnTheNetwork) {
  const ModelSpec model = Preset("qwen3-30b-a3b");
  const TrainingSpec training = Training(512, 4096);
  const ParallelDims dims = MakeParallelDims(16, 1, 1, 1, /*micro_batch=*/1);
  const ClusterSpec cluster = H100Nodes(2);
  const GpuSpec& gpu = cluster.gpu();
  const PerformanceParameters params;
  const MoeRouting routing;
  const double tokens = 4096.0 * 8 * 2 * 2048;  // S copies of 2h bytes
  const double probabilities = 4096.0 * 8 * 4;
  const double nvlink = gpu.nvlink_bandwidth_gbps * 1e9 * params.nvlink_efficiency;
  const double network = gpu.network_bandwidth_gbps * 1e9 * params.all_to_all_network_efficiency;
  // ep 8 on one node: every share but the rank's own over NVLink.
  EXPECT_DOUBLE_EQ(
      AllToAllForwardSeconds(model, training, dims, {8, 1}, routing, cluster, params),
      3 * params.nvlink_latency_seconds + (2 * tokens + probabilities) * 7 / 8 / nvlink);
  // ep 16 over two nodes: 7 of 16 shares over NVLink, 8 over the network at the same time; the
  // network, 9 times slower here, paces it.
  ASSERT_GT(8 / network, 7 / nvlink);
  EXPECT_DOUBLE_EQ(
      AllToAllForwardSeconds(model, training, dims, {16, 1}, routing, cluster, params),
      3 * params.network_latency_seconds + (2 * tokens + probabilities) * 8 / 16 / network);
  // etp 2 x ep 8 spans 16 ranks: 4 of the ep group's ranks on each node, so half the shares
  // cross the network; the etp gather and scatter of the N = 2 S received tokens stay inside.
  const double etp_bytes = 2 * tokens;
  EXPECT_DOUBLE_EQ(AllToAllForwardSeconds(model, training, dims, {8, 2}, routing, cluster, params),
                   3 * params.network_latency_seconds +
                       (2 * tokens + probabilities) * 4 / 8 / network +
                       2 * (params.nvlink_latency_seconds + etp_bytes / 2 / nvlink));
  EXPECT_EQ(AllToAllForwardSeconds(model, training, dims, {1, 1}, routing, cluster, params), 0);
}

TEST(AllGatherDispatchTest, GathersTokensProbabilitiesAndMapAndScattersFp32Outputs) {
  const ModelSpec model = Preset("qwen3-30b-a3b");
  const TrainingSpec training = Training(512, 4096);
  const ParallelDims dims = MakeParallelDims(8, 1, 1, 1, /*micro_batch=*/1);
  const ClusterSpec cluster = H100Nodes(1);
  const PerformanceParameters params;
  const double nvlink = cluster.gpu().nvlink_bandwidth_gbps * 1e9 * params.nvlink_efficiency;
  const double gathered = 4096.0 * 8;
  const double dispatch_bytes = gathered * (2 * 2048 + 4 * 128 + 128);
  const double combine_bytes = gathered * 4 * 2048;
  EXPECT_DOUBLE_EQ(
      AllGatherDispatchForwardSeconds(model, training, dims, {8, 1}, cluster, params),
      4 * params.nvlink_latency_seconds + (dispatch_bytes + combine_bytes) * 7 / 8 / nvlink);
  EXPECT_EQ(AllGatherDispatchForwardSeconds(model, training, dims, {1, 1}, cluster, params), 0);
}

TEST(MoeLayerSecondsTest, BackwardTwiceTheGemmsOnceTheRestAndARecomputedForward) {
  const ModelSpec model = Preset("llama4-scout");
  const TrainingSpec training = Training(256, 8192);
  ParallelDims dims = MakeParallelDims(8, 2, 1, 1, /*micro_batch=*/1);
  dims.ep = 8;
  const ExpertParallelism expert{8, 1};
  const MoeRouting routing;
  const ClusterSpec cluster = H100Nodes(2);
  PerformanceParameters params;

  const MoeLayerSeconds none = PredictMoeLayerSeconds(model, training, dims, expert, routing,
                                                      cluster, kPeakFlops, kPeakFlops, params);
  EXPECT_DOUBLE_EQ(none.routed_experts, 3 * GroupedGemmForwardSeconds(model, training, dims, expert,
                                                                      routing, kPeakFlops, params));
  EXPECT_DOUBLE_EQ(none.shared_experts,
                   3 * SharedExpertForwardSeconds(model, training, dims, kPeakFlops, params));
  EXPECT_DOUBLE_EQ(none.permutation, 2 * PermutationForwardSeconds(model, training, dims, expert,
                                                                   routing, cluster.gpu(), params));
  EXPECT_DOUBLE_EQ(none.communication, 2 * AllToAllForwardSeconds(model, training, dims, expert,
                                                                  routing, cluster, params));
  EXPECT_DOUBLE_EQ(none.exposed_communication, none.communication);
  EXPECT_DOUBLE_EQ(none.router,
                   3 * RouterGemmForwardSeconds(model, training, dims, kPeakFlops, params) +
                       2 * RouterTopKForwardSeconds(model, training, dims, cluster.gpu(), params));

  dims.recompute = Recompute::kFull;
  const MoeLayerSeconds full = PredictMoeLayerSeconds(model, training, dims, expert, routing,
                                                      cluster, kPeakFlops, kPeakFlops, params);
  EXPECT_DOUBLE_EQ(full.routed_experts, none.routed_experts * 4 / 3);
  EXPECT_DOUBLE_EQ(full.exposed_communication, none.exposed_communication * 3 / 2);

  // The overlap hides ep_comm_overlap of it only in runs that overlap, and not under full
  // recompute (Megatron-LM refuses the flag there).
  params.ep_comm_overlap = 1;
  const MoeLayerSeconds not_overlapping = PredictMoeLayerSeconds(
      model, training, dims, expert, routing, cluster, kPeakFlops, kPeakFlops, params);
  EXPECT_DOUBLE_EQ(not_overlapping.exposed_communication, full.exposed_communication);
  TrainingOptions options = training.options();
  options.moe_expert_parallel_overlap = true;
  const TrainingSpec overlapping = *TrainingSpec::Create(options);
  EXPECT_DOUBLE_EQ(PredictMoeLayerSeconds(model, overlapping, dims, expert, routing, cluster,
                                          kPeakFlops, kPeakFlops, params)
                       .exposed_communication,
                   full.exposed_communication);
  dims.recompute = Recompute::kNone;
  const MoeLayerSeconds hidden = PredictMoeLayerSeconds(model, overlapping, dims, expert, routing,
                                                        cluster, kPeakFlops, kPeakFlops, params);
  EXPECT_EQ(hidden.exposed_communication, 0);
  EXPECT_DOUBLE_EQ(hidden.communication, none.communication);
  EXPECT_DOUBLE_EQ(hidden.Compute(), none.Compute());
}

// Llama 4 Scout has one shared expert; Qwen3-30B-A3B none, so the switch leaves it alone.
TEST(MoeLayerSecondsTest, SharedExpertsBesideTheDispatcherHideAsMuchOfItAsTheyTake) {
  const ModelSpec scout = Preset("llama4-scout");
  TrainingOptions options = Training(256, 8192).options();
  const TrainingSpec serial = *TrainingSpec::Create(options);
  options.moe_shared_expert_overlap = true;
  const TrainingSpec beside = *TrainingSpec::Create(options);
  EXPECT_TRUE(SharedExpertOverlapApplies(scout, beside));
  EXPECT_FALSE(SharedExpertOverlapApplies(scout, serial));
  EXPECT_FALSE(SharedExpertOverlapApplies(Preset("qwen3-30b-a3b"), beside));
  EXPECT_FALSE(SharedExpertOverlapApplies(Preset("llama3.1-8b"), beside));

  ParallelDims dims = MakeParallelDims(16, 2, 1, 1, /*micro_batch=*/1);
  const MoeRouting routing;
  const ClusterSpec cluster = H100Nodes(4);
  PerformanceParameters params;
  params.all_to_all_network_efficiency = 0.05;
  for (int64_t ep : {8, 16}) {
    // ep 8: one node's NVLink all-to-all, shorter than the shared expert; ep 16 spans two
    // nodes, and the all-to-all over a slow network is the longer.
    dims.ep = ep;
    const ExpertParallelism expert{ep, 1};
    const MoeLayerSeconds alone = PredictMoeLayerSeconds(scout, serial, dims, expert, routing,
                                                         cluster, kPeakFlops, kPeakFlops, params);
    const MoeLayerSeconds overlapped = PredictMoeLayerSeconds(
        scout, beside, dims, expert, routing, cluster, kPeakFlops, kPeakFlops, params);
    EXPECT_EQ(alone.shared_experts > alone.exposed_communication, ep == 8) << ep;
    EXPECT_DOUBLE_EQ(overlapped.Compute(), alone.Compute()) << ep;
    EXPECT_DOUBLE_EQ(overlapped.communication, alone.communication) << ep;
    EXPECT_DOUBLE_EQ(overlapped.exposed_communication,
                     std::max(0.0, alone.exposed_communication - alone.shared_experts))
        << ep;
    // The layer takes the longer of the shared experts and the dispatcher's communication.
    EXPECT_DOUBLE_EQ(overlapped.Compute() + overlapped.exposed_communication,
                     alone.Compute() - alone.shared_experts +
                         std::max(alone.shared_experts, alone.exposed_communication))
        << ep;
  }
}

TEST(MoeLayerSecondsTest, DenseModelsHaveNoMoeTerms) {
  const ModelSpec dense = Preset("llama3.1-8b");
  const TrainingSpec training = Training(128, 8192);
  const ParallelDims dims = MakeParallelDims(8, 2, 1, 1, /*micro_batch=*/1);
  const ExpertParallelism expert;
  const MoeRouting routing;
  const ClusterSpec cluster = H100Nodes(2);
  const PerformanceParameters params;
  const GpuSpec& gpu = cluster.gpu();
  EXPECT_EQ(RouterForwardFlops(dense, 1000), 0);
  EXPECT_EQ(RoutedExpertForwardFlops(dense, 1000), 0);
  EXPECT_EQ(SharedExpertForwardFlops(dense, 1000), 0);
  EXPECT_EQ(TokensPerLocalExpert(dense, training, dims, expert, routing), 0);
  EXPECT_EQ(GroupedGemmForwardSeconds(dense, training, dims, expert, routing, kPeakFlops, params),
            0);
  EXPECT_EQ(SharedExpertForwardSeconds(dense, training, dims, kPeakFlops, params), 0);
  EXPECT_EQ(RouterGemmForwardSeconds(dense, training, dims, kPeakFlops, params), 0);
  EXPECT_EQ(RouterTopKForwardSeconds(dense, training, dims, gpu, params), 0);
  EXPECT_EQ(ExpertFp8CastSeconds(dense, Fp8(training), dims, expert, routing, gpu, params), 0);
  EXPECT_EQ(PermutationForwardSeconds(dense, training, dims, expert, routing, gpu, params), 0);
  EXPECT_EQ(AllToAllBytesLeavingRank(dense, training, dims, {8, 1}, routing), 0);
  EXPECT_EQ(AllToAllForwardSeconds(dense, training, dims, {8, 1}, routing, cluster, params), 0);
  EXPECT_EQ(AllGatherDispatchForwardSeconds(dense, training, dims, {8, 1}, cluster, params), 0);
  const MoeLayerSeconds none = PredictMoeLayerSeconds(dense, training, dims, {8, 1}, routing,
                                                      cluster, kPeakFlops, kPeakFlops, params);
  EXPECT_EQ(none.Compute() + none.communication + none.exposed_communication, 0);
}

}  // namespace
}  // namespace paratune
