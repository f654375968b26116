#include "estimator/performance_model.h"

#include <cmath>

#include "estimator/moe_performance.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

ParallelDims Dims(int64_t dp, int64_t tp, int64_t pp, int64_t cp, int64_t b) {
  return MakeParallelDims(dp, tp, pp, cp, b);
}

class PerformanceModelTest : public ::testing::Test {
 protected:
  // Llama-3.1-8B, s 8192, global batch 1024, on 2 nodes of 8 H100s (16 GPUs).
  PerformanceModelTest()
      : model_(*FindModelPreset("llama3.1-8b")),
        training_(*TrainingSpec::Create({1024, 8192})),
        cluster_(*ClusterSpec::Create(*FindGpuPreset("h100-80gb"), 2, 8)),
        params_(DefaultPerformanceParameters(cluster_.gpu())) {}

  PerformanceEstimate Predict(const ParallelDims& dims) const {
    return Predict(dims, training_, cluster_);
  }

  PerformanceEstimate Predict(const ParallelDims& dims, const TrainingSpec& training,
                              const ClusterSpec& cluster) const {
    PlacementRules rules;
    rules.allow_tp_cp_across_nodes = true;
    absl::StatusOr<ParallelConfig> config =
        ParallelConfig::Create(model_, training, cluster, rules, dims);
    EXPECT_TRUE(config.ok()) << config.status();
    return PredictPerformance(model_, training, cluster, *config,
                              DefaultPerformanceParameters(cluster.gpu()));
  }

  // training_ under TorchTitan, compiled or not.
  TrainingSpec TorchTitan(bool compiled = false) const {
    TrainingOptions options = training_.options();
    options.framework = Framework::kTorchTitan;
    options.torch_compile = compiled;
    return *TrainingSpec::Create(options);
  }

  // dp 8 x tp 2 with its replicas fully sharded (TorchTitan's FSDP) under `training`.
  ParallelConfig FsdpConfig(const TrainingSpec& training) const {
    ParallelDims dims = Dims(8, 2, 1, 1, 1);
    dims.dp_sharding = DataParallelSharding::kFull;
    PlacementRules rules;
    rules.allow_tp_cp_across_nodes = true;
    return *ParallelConfig::Create(model_, training, cluster_, rules, dims);
  }

  ModelSpec model_;
  TrainingSpec training_;
  ClusterSpec cluster_;
  PerformanceParameters params_;
};

TEST_F(PerformanceModelTest, ModelFlopsFormula) {
  const double h = 4096, L = 32, f = 14336, V = 128256, s = 8192;
  const double expected =
      1024 * s * (12 * L * h * h * (1 + 8.0 / 32 + s / h) + 18 * L * f * h + 6 * V * h);
  EXPECT_DOUBLE_EQ(ModelFlopsPerStep(model_, training_), expected);
  // 5.79e10 per token: 2.09e10 attention block, 3.38e10 MLP, 0.32e10 LM head.
  EXPECT_NEAR(ModelFlopsPerStep(model_, training_) / (1024 * s), 5.79e10, 0.01e10);
}

TEST_F(PerformanceModelTest, PlausibleThroughputForGoodConfigurations) {
  // Measured Megatron runs of data/measured/ reach 430-620 TFLOP/s per GPU for these.
  for (const ParallelDims& dims :
       {Dims(8, 2, 1, 1, 1), Dims(4, 4, 1, 1, 1), Dims(8, 1, 1, 2, 1), Dims(4, 2, 1, 2, 1)}) {
    const PerformanceEstimate estimate = Predict(dims);
    EXPECT_GT(estimate.model_tflops_per_gpu, 300)
        << ParallelConfig::FromCheckedDims(dims).ToString();
    EXPECT_LT(estimate.model_tflops_per_gpu, 650)
        << ParallelConfig::FromCheckedDims(dims).ToString();
  }
}

TEST_F(PerformanceModelTest, PartsAddUpAndRatesFollowFromStepTime) {
  // tp 2 x cp 4 spans two 4-GPU nodes, so the ring's exchanges cross the network.
  const ClusterSpec small_nodes = *ClusterSpec::Create(*FindGpuPreset("h100-80gb"), 4, 4);
  const PerformanceEstimate e = Predict(Dims(1, 2, 2, 4, 1), training_, small_nodes);
  EXPECT_DOUBLE_EQ(e.step_time_seconds,
                   e.compute_seconds + e.pipeline_bubble_seconds + e.tp_communication_seconds +
                       e.cp_communication_seconds + e.dp_communication_seconds +
                       e.pp_communication_seconds + e.optimizer_seconds);
  EXPECT_GT(e.compute_seconds, 0);
  EXPECT_GT(e.pipeline_bubble_seconds, 0);
  EXPECT_GT(e.tp_communication_seconds, 0);
  EXPECT_GT(e.cp_communication_seconds, 0);
  EXPECT_GT(e.dp_communication_seconds, 0);
  EXPECT_GT(e.pp_communication_seconds, 0);
  EXPECT_GT(e.optimizer_seconds, 0);
  EXPECT_DOUBLE_EQ(e.tokens_per_second * e.step_time_seconds, 1024.0 * 8192);
  EXPECT_DOUBLE_EQ(e.model_flops_per_step, ModelFlopsPerStep(model_, training_));
  EXPECT_DOUBLE_EQ(e.model_tflops_per_gpu,
                   e.model_flops_per_step / (e.step_time_seconds * 16) / 1e12);
  EXPECT_DOUBLE_EQ(e.mfu, e.model_tflops_per_gpu / 989);
}

TEST_F(PerformanceModelTest, TensorParallelCommunicationHidesOnlyWhenOverlapped) {
  TrainingOptions options = training_.options();
  options.tp_comm_overlap = true;
  const TrainingSpec overlapped = *TrainingSpec::Create(options);
  const PerformanceEstimate exposed = Predict(Dims(2, 8, 1, 1, 1));
  const PerformanceEstimate hidden = Predict(Dims(2, 8, 1, 1, 1), overlapped, cluster_);
  EXPECT_DOUBLE_EQ(hidden.tp_communication_seconds,
                   exposed.tp_communication_seconds * (1 - params_.tp_overlap));
  EXPECT_EQ(hidden.compute_seconds, exposed.compute_seconds);
}

TEST_F(PerformanceModelTest, NoCommunicationWithoutTheParallelism) {
  const PerformanceEstimate e = Predict(Dims(16, 1, 1, 1, 1));
  EXPECT_EQ(e.tp_communication_seconds, 0);
  EXPECT_EQ(e.cp_communication_seconds, 0);
  EXPECT_EQ(e.pp_communication_seconds, 0);
  EXPECT_EQ(e.pipeline_bubble_seconds, 0);
  EXPECT_GT(e.dp_communication_seconds, 0);
  const ClusterSpec one_gpu = *ClusterSpec::Create(*FindGpuPreset("h100-80gb"), 1, 1);
  EXPECT_EQ(Predict(Dims(1, 1, 1, 1, 1), training_, one_gpu).dp_communication_seconds, 0);
}

TEST_F(PerformanceModelTest, TensorParallelOverTheNetworkIsSlower) {
  // tp 8 inside 8-GPU nodes versus across 4-GPU nodes, same GPUs otherwise.
  const ClusterSpec small_nodes = *ClusterSpec::Create(*FindGpuPreset("h100-80gb"), 4, 4);
  const PerformanceEstimate nvlink = Predict(Dims(2, 8, 1, 1, 1));
  const PerformanceEstimate network = Predict(Dims(2, 8, 1, 1, 1), training_, small_nodes);
  EXPECT_GT(network.tp_communication_seconds, 4 * nvlink.tp_communication_seconds);
  EXPECT_GT(network.step_time_seconds, nvlink.step_time_seconds);
  // And within a node, more TP costs more communication per GPU of work.
  EXPECT_GT(Predict(Dims(2, 8, 1, 1, 1)).step_time_seconds,
            Predict(Dims(8, 2, 1, 1, 1)).step_time_seconds);
}

TEST_F(PerformanceModelTest, BubbleGrowsWithPipelineDepthAndShrinksWithInterleaving) {
  const TrainingSpec small_batch = *TrainingSpec::Create({64, 8192});
  double previous_fraction = 0;
  for (int64_t pp : {2, 4, 8}) {
    const PerformanceEstimate e = Predict(Dims(16 / (2 * pp), 2, pp, 1, 1), small_batch, cluster_);
    const double fraction = e.pipeline_bubble_seconds / e.step_time_seconds;
    EXPECT_GT(fraction, previous_fraction) << "pp " << pp;
    previous_fraction = fraction;
  }
  ParallelDims dims = Dims(2, 2, 4, 1, 1);
  const PerformanceEstimate plain = Predict(dims, small_batch, cluster_);
  dims.virtual_pipeline = 4;
  const PerformanceEstimate interleaved = Predict(dims, small_batch, cluster_);
  EXPECT_LT(interleaved.pipeline_bubble_seconds, plain.pipeline_bubble_seconds);
  // More micro-batches amortize the same bubble.
  const PerformanceEstimate large_batch = Predict(Dims(2, 2, 4, 1, 1));
  EXPECT_LT(large_batch.pipeline_bubble_seconds / large_batch.step_time_seconds,
            plain.pipeline_bubble_seconds / plain.step_time_seconds);
}

TEST_F(PerformanceModelTest, ContextParallelExchangesHideBehindAttentionOnlyWhenFast) {
  // Inside an 8-GPU node each K/V exchange is shorter than the attention block it overlaps.
  EXPECT_EQ(Predict(Dims(4, 2, 1, 2, 1)).cp_communication_seconds, 0);
  EXPECT_EQ(Predict(Dims(2, 2, 1, 4, 1)).cp_communication_seconds, 0);
  // Across 4-GPU nodes, over the network, it is not, and a longer ring exposes more.
  const ClusterSpec small_nodes = *ClusterSpec::Create(*FindGpuPreset("h100-80gb"), 4, 4);
  const PerformanceEstimate cp4 = Predict(Dims(2, 2, 1, 4, 1), training_, small_nodes);
  const PerformanceEstimate cp8 = Predict(Dims(1, 2, 1, 8, 1), training_, small_nodes);
  EXPECT_GT(cp4.cp_communication_seconds, 0);
  EXPECT_GT(cp8.cp_communication_seconds, cp4.cp_communication_seconds);
  // Hiding nothing exposes every exchange in full.
  PerformanceParameters no_overlap = params_;
  no_overlap.cp_overlap = 0;
  const ParallelConfig config = ParallelConfig::FromCheckedDims(Dims(4, 2, 1, 2, 1));
  EXPECT_GT(
      PredictPerformance(model_, training_, cluster_, config, no_overlap).cp_communication_seconds,
      0);
}

TEST_F(PerformanceModelTest, AllGatheredKeysAndValuesAreExposedInFull) {
  TrainingOptions options = training_.options();
  options.cp_comm_type = CpCommType::kAllGather;
  const TrainingSpec all_gather = *TrainingSpec::Create(options);
  // dp4 tp2 cp2 inside a node, where the ring hides every exchange: 1024 / 4 = 256
  // micro-batches of 32 layers, each all-gathering K and V once forward and once backward and
  // reduce-scattering their gradients, at NVLink's achievable bandwidth.
  const ParallelDims dims = Dims(4, 2, 1, 2, 1);
  EXPECT_EQ(Predict(dims).cp_communication_seconds, 0);
  const double kv_bytes_per_rank = 2 * (8192 / 2) * (8 * 128) / 2 * 2;  // K and V, bf16
  const double gather = params_.nvlink_latency_seconds + 2 * kv_bytes_per_rank * (2 - 1) / 2 /
                                                             (cluster_.gpu().nvlink_bandwidth_gbps *
                                                              1e9 * params_.nvlink_efficiency);
  EXPECT_DOUBLE_EQ(Predict(dims, all_gather, cluster_).cp_communication_seconds,
                   256 * 32 * 3 * gather);
}

TEST_F(PerformanceModelTest, FlashAttentionAndUnfusedAttentionHaveTheirOwnEfficiency) {
  PerformanceParameters params = params_;
  const ParallelConfig config = ParallelConfig::FromCheckedDims(Dims(8, 2, 1, 1, 1));
  TrainingOptions options = training_.options();
  options.flash_attention = false;
  const TrainingSpec unfused = *TrainingSpec::Create(options);
  const double flash_time =
      PredictPerformance(model_, training_, cluster_, config, params).compute_seconds;
  const double unfused_time =
      PredictPerformance(model_, unfused, cluster_, config, params).compute_seconds;
  params.unfused_attention_efficiency /= 2;
  EXPECT_EQ(PredictPerformance(model_, training_, cluster_, config, params).compute_seconds,
            flash_time);
  EXPECT_GT(PredictPerformance(model_, unfused, cluster_, config, params).compute_seconds,
            unfused_time);
}

TEST_F(PerformanceModelTest, RecomputeAndPrecision) {
  ParallelDims dims = Dims(8, 2, 1, 1, 1);
  const PerformanceEstimate none = Predict(dims);
  dims.recompute = Recompute::kFull;
  const PerformanceEstimate full = Predict(dims);
  EXPECT_GT(full.compute_seconds, 1.25 * none.compute_seconds);
  EXPECT_GT(full.tp_communication_seconds, none.tp_communication_seconds);
  EXPECT_EQ(full.model_flops_per_step, none.model_flops_per_step);
  // Selective recompute re-runs the attention forward: slower than none, faster than full.
  dims.recompute = Recompute::kSelective;
  const PerformanceEstimate selective = Predict(dims);
  EXPECT_GT(selective.compute_seconds, none.compute_seconds);
  EXPECT_LT(selective.compute_seconds, full.compute_seconds);

  TrainingOptions options = training_.options();
  options.fp8 = true;
  const PerformanceEstimate fp8 =
      Predict(Dims(8, 2, 1, 1, 1), *TrainingSpec::Create(options), cluster_);
  EXPECT_LT(fp8.compute_seconds, 0.8 * none.compute_seconds);
  EXPECT_GT(fp8.compute_seconds, 0.5 * none.compute_seconds);  // attention stays bf16
}

TrainingSpec Fp8(const TrainingSpec& training, bool param_gather = false) {
  TrainingOptions options = training.options();
  options.fp8 = true;
  options.fp8_param_gather = param_gather;
  return *TrainingSpec::Create(options);
}

TEST_F(PerformanceModelTest, Fp8IsFasterButLessThanTwiceOnGemmBoundShapes) {
  // Llama-3.1-405B's layers on tp 8: large GEMMs, attention a small share at s 8192.
  const ModelSpec model = *FindModelPreset("llama3.1-405b");
  const TrainingSpec training = *TrainingSpec::Create({576, 8192});
  const ClusterSpec cluster = *ClusterSpec::Create(*FindGpuPreset("h100-80gb"), 18, 8);
  ParallelDims dims = Dims(2, 8, 9, 1, 1);
  dims.virtual_pipeline = 7;
  const ParallelConfig config = *ParallelConfig::Create(model, training, cluster, {}, dims);
  const PerformanceParameters params = DefaultPerformanceParameters(cluster.gpu());
  const PerformanceEstimate bf16 = PredictPerformance(model, training, cluster, config, params);
  const PerformanceEstimate fp8 = PredictPerformance(model, Fp8(training), cluster, config, params);
  EXPECT_LT(fp8.compute_seconds, 0.8 * bf16.compute_seconds);
  EXPECT_GT(fp8.compute_seconds, 0.5 * bf16.compute_seconds);
  EXPECT_LT(fp8.step_time_seconds, bf16.step_time_seconds);
  EXPECT_GT(fp8.step_time_seconds, 0.5 * bf16.step_time_seconds);
  // Not the doubled bf16 peak: the fitted fp8 GEMMs are less efficient than bf16 ones of the
  // same shape, and the casts cost HBM time.
  PerformanceParameters doubled = params;
  doubled.fp8_gemm_efficiency_max = params.gemm_efficiency_max;
  doubled.fp8_gemm_half_efficiency_flops = params.gemm_half_efficiency_flops;
  EXPECT_GT(fp8.compute_seconds,
            PredictPerformance(model, Fp8(training), cluster, config, doubled).compute_seconds);
}

TEST_F(PerformanceModelTest, Fp8LeavesAttentionAndTheLmHeadInBf16) {
  const ParallelConfig config = ParallelConfig::FromCheckedDims(Dims(8, 2, 1, 1, 1));
  const TrainingSpec fp8 = Fp8(training_);
  const auto compute = [&](const TrainingSpec& training, const PerformanceParameters& params) {
    return PredictPerformance(model_, training, cluster_, config, params).compute_seconds;
  };
  // Attention's time changes fp8 and bf16 runs alike.
  PerformanceParameters slow_attention = params_;
  slow_attention.attention_efficiency /= 2;
  EXPECT_NEAR(compute(fp8, slow_attention) - compute(fp8, params_),
              compute(training_, slow_attention) - compute(training_, params_), 1e-9);
  // So does the LM head's, a bf16 GEMM in both: of the compute, only the LM head depends on
  // the vocabulary.
  const ModelSpec no_head_vocab = *ModelSpec::Create("small-vocab", [&] {
    ModelDimensions dims = model_.dims();
    dims.vocab_size = 1024;
    return dims;
  }());
  const auto head = [&](const TrainingSpec& training) {
    return PredictPerformance(model_, training, cluster_, config, params_).compute_seconds -
           PredictPerformance(no_head_vocab, training, cluster_, config, params_).compute_seconds;
  };
  EXPECT_NEAR(head(fp8), head(training_), 1e-9);
  EXPECT_GT(head(fp8), 0);
  // The fp8 fields change fp8 runs only.
  PerformanceParameters fp8_fields = params_;
  fp8_fields.fp8_gemm_efficiency_max /= 2;
  fp8_fields.fp8_cast_hbm_efficiency /= 2;
  EXPECT_EQ(compute(training_, fp8_fields), compute(training_, params_));
  EXPECT_GT(compute(fp8, fp8_fields), compute(fp8, params_));
}

TEST_F(PerformanceModelTest, Fp8CastsCostHbmTimeAndFp8WeightsCastLess) {
  const ParallelConfig config = ParallelConfig::FromCheckedDims(Dims(8, 2, 1, 1, 1));
  PerformanceParameters fast_casts = params_;
  fast_casts.fp8_cast_hbm_efficiency = 1;
  PerformanceParameters slow_casts = params_;
  slow_casts.fp8_cast_hbm_efficiency = 0.3;
  const TrainingSpec fp8 = Fp8(training_);
  const double fast = PredictPerformance(model_, fp8, cluster_, config, fast_casts).compute_seconds;
  const double slow = PredictPerformance(model_, fp8, cluster_, config, slow_casts).compute_seconds;
  // At 0.3 of the HBM bandwidth the casts take 1/0.3 times as long as at all of it: the
  // difference is (1/0.3 - 1) times their time at full bandwidth, a few percent of compute.
  const double casts = (slow - fast) / (1 / 0.3 - 1);
  EXPECT_GT(casts, 0.02 * fast);
  EXPECT_LT(casts, 0.2 * fast);
  // fp8 model weights: only the transpose is cast, and the parameter all-gather moves 1 byte
  // per linear weight.
  const PerformanceEstimate bf16_weights =
      PredictPerformance(model_, fp8, cluster_, config, params_);
  const PerformanceEstimate fp8_weights =
      PredictPerformance(model_, Fp8(training_, true), cluster_, config, params_);
  EXPECT_LT(fp8_weights.compute_seconds, bf16_weights.compute_seconds);
  EXPECT_LT(fp8_weights.dp_communication_seconds, bf16_weights.dp_communication_seconds);
}

TEST_F(PerformanceModelTest, MfuIsAgainstThePeakOfThePrecision) {
  const PerformanceEstimate bf16 = Predict(Dims(8, 2, 1, 1, 1));
  EXPECT_EQ(bf16.mfu_peak_tflops, 989);
  EXPECT_FALSE(bf16.mfu_peak_is_fp8);
  EXPECT_DOUBLE_EQ(bf16.mfu, bf16.model_tflops_per_gpu / 989);
  const PerformanceEstimate fp8 = Predict(Dims(8, 2, 1, 1, 1), Fp8(training_), cluster_);
  EXPECT_EQ(fp8.mfu_peak_tflops, 2 * 989);
  EXPECT_TRUE(fp8.mfu_peak_is_fp8);
  EXPECT_DOUBLE_EQ(fp8.mfu, fp8.model_tflops_per_gpu / 1978);
  EXPECT_GT(fp8.model_tflops_per_gpu, bf16.model_tflops_per_gpu);
  EXPECT_LT(fp8.mfu, bf16.mfu);
  // An A100 has no fp8 tensor cores: its fp8 peak is its bf16 peak, and fp8 gains nothing.
  const ClusterSpec a100 = *ClusterSpec::Create(*FindGpuPreset("a100-80gb"), 2, 8);
  const PerformanceEstimate a100_fp8 = Predict(Dims(8, 2, 1, 1, 1), Fp8(training_), a100);
  EXPECT_EQ(a100_fp8.mfu_peak_tflops, 312);
  EXPECT_FALSE(a100_fp8.mfu_peak_is_fp8);
  EXPECT_GE(a100_fp8.step_time_seconds,
            Predict(Dims(8, 2, 1, 1, 1), training_, a100).step_time_seconds);
  EXPECT_EQ(DensePeakTflops(*FindGpuPreset("h200-141gb"), Fp8(training_)), 1978);
  EXPECT_TRUE(UsesFp8TensorCores(*FindGpuPreset("h100-94gb"), Fp8(training_)));
  EXPECT_FALSE(UsesFp8TensorCores(*FindGpuPreset("h100-94gb"), training_));
}

TEST_F(PerformanceModelTest, DistributedOptimizerShardsTheOptimizerStep) {
  const PerformanceEstimate sharded = Predict(Dims(8, 2, 1, 1, 1));
  ParallelDims unsharded = Dims(8, 2, 1, 1, 1);
  unsharded.dp_sharding = DataParallelSharding::kNone;
  const PerformanceEstimate whole = Predict(unsharded);
  EXPECT_DOUBLE_EQ(whole.optimizer_seconds, 8 * sharded.optimizer_seconds);
}

TEST_F(PerformanceModelTest, FullShardingGathersTheWeightsTwicePerMicroBatch) {
  // ZeRO-1 reduces and gathers once per step, ZeRO-2 reduces every micro-batch's gradients;
  // FSDP also gathers the weights before each micro-batch's forward and backward.
  ParallelDims dims = Dims(8, 2, 1, 1, 1);
  const double optimizer = Predict(dims).dp_communication_seconds;
  dims.dp_sharding = DataParallelSharding::kGradients;
  const double gradients = Predict(dims).dp_communication_seconds;
  EXPECT_GT(gradients, 10 * optimizer);
  dims.dp_sharding = DataParallelSharding::kFull;
  const double full = Predict(dims).dp_communication_seconds;
  const double micro_batches = 1024.0 / 8;
  EXPECT_GT(full, micro_batches * optimizer);
  EXPECT_LT(full, 1.5 * micro_batches * optimizer);
  EXPECT_LT(gradients, full);
}

TEST_F(PerformanceModelTest, TorchTitanAttentionRunsAtItsOwnShare) {
  // Halving torchtitan_attention_efficiency doubles the attention's time alone: the compute
  // grows by exactly the attention's forward and backward seconds at the first efficiency.
  const TrainingSpec titan = TorchTitan();
  const ParallelConfig config = FsdpConfig(titan);
  PerformanceParameters params = params_;
  params.torchtitan_attention_efficiency = 1;
  const double same = PredictPerformance(model_, titan, cluster_, config, params).compute_seconds;
  params.torchtitan_attention_efficiency = 0.5;
  const double slower = PredictPerformance(model_, titan, cluster_, config, params).compute_seconds;
  params.torchtitan_attention_efficiency = 0.25;
  const double slowest =
      PredictPerformance(model_, titan, cluster_, config, params).compute_seconds;
  EXPECT_GT(slower, same);
  // Attention time a at efficiency 1: same = r + a, slower = r + 2a, slowest = r + 4a.
  EXPECT_NEAR(slowest - slower, 2 * (slower - same), 1e-9 * slowest);
  // Megatron-LM runs do not depend on it.
  const ParallelConfig megatron = FsdpConfig(training_);
  EXPECT_DOUBLE_EQ(
      PredictPerformance(model_, training_, cluster_, megatron, params).compute_seconds,
      PredictPerformance(model_, training_, cluster_, megatron, params_).compute_seconds);
}

TEST_F(PerformanceModelTest, TorchTitanComputesAtItsShareOfMegatronsThroughput) {
  const TrainingSpec eager = TorchTitan();
  const TrainingSpec compiled = TorchTitan(/*compiled=*/true);
  const ParallelConfig config = FsdpConfig(eager);
  PerformanceParameters params = params_;
  params.torchtitan_eager_compute_efficiency = 1;
  params.torchtitan_compiled_compute_efficiency = 1;
  const PerformanceEstimate megatron_speed =
      PredictPerformance(model_, eager, cluster_, config, params);
  params.torchtitan_eager_compute_efficiency = 0.5;
  params.torchtitan_compiled_compute_efficiency = 0.8;
  const PerformanceEstimate half = PredictPerformance(model_, eager, cluster_, config, params);
  EXPECT_DOUBLE_EQ(half.compute_seconds, 2 * megatron_speed.compute_seconds);
  EXPECT_DOUBLE_EQ(half.dp_communication_seconds, megatron_speed.dp_communication_seconds);
  EXPECT_DOUBLE_EQ(PredictPerformance(model_, compiled, cluster_, config, params).compute_seconds,
                   megatron_speed.compute_seconds / 0.8);
  // Megatron-LM runs do not depend on them.
  const ParallelConfig megatron = FsdpConfig(training_);
  EXPECT_DOUBLE_EQ(
      PredictPerformance(model_, training_, cluster_, megatron, params).compute_seconds,
      PredictPerformance(model_, training_, cluster_, megatron, params_).compute_seconds);
}

TEST_F(PerformanceModelTest, EstimatesCarryTheErrorBarOfTheirOwnFit) {
  PerformanceParameters params;
  params.relative_error = 0.06;
  params.moe_relative_error = 0.35;
  params.torchtitan_relative_error = 0.1;
  EXPECT_EQ(PredictionRelativeError(model_, training_, params), 0.06);
  const ModelSpec mixtral = *FindModelPreset("mixtral-8x7b");
  EXPECT_EQ(PredictionRelativeError(mixtral, training_, params), 0.35);
  TrainingOptions options = training_.options();
  options.framework = Framework::kTorchTitan;
  const TrainingSpec titan = *TrainingSpec::Create(options);
  EXPECT_EQ(PredictionRelativeError(model_, titan, params), 0.1);
  EXPECT_EQ(PredictionRelativeError(mixtral, titan, params), 0.35);
  params.flex_relative_error = 0.8;
  options = training_.options();
  options.moe_token_dispatcher = TokenDispatcher::kFlexHybridEp;
  const TrainingSpec flex = *TrainingSpec::Create(options);
  EXPECT_EQ(PredictionRelativeError(mixtral, flex, params), 0.8);
  EXPECT_EQ(PredictionRelativeError(model_, flex, params), 0.06);  // a dense model routes nothing
  EXPECT_EQ(Predict(Dims(8, 2, 1, 1, 1)).relative_error, params_.relative_error);
}

TEST(TiedEmbeddingsPerformanceTest, OptimizerStepCoversOneEmbeddingCopy) {
  const ModelSpec tied = *FindModelPreset("llama3.2-1b");
  ModelDimensions dims = tied.dims();
  dims.tied_embeddings = false;
  const ModelSpec untied = *ModelSpec::Create("untied", dims);
  const TrainingSpec training = *TrainingSpec::Create({64, 4096});
  const ClusterSpec cluster = *ClusterSpec::Create(*FindGpuPreset("h100-80gb"), 1, 8);
  ParallelDims parallel;
  parallel.dp = 8;
  const ParallelConfig config = *ParallelConfig::Create(tied, training, cluster, {}, parallel);
  const PerformanceParameters params = DefaultPerformanceParameters(cluster.gpu());
  const double tied_seconds =
      PredictPerformance(tied, training, cluster, config, params).optimizer_seconds;
  const double untied_seconds =
      PredictPerformance(untied, training, cluster, config, params).optimizer_seconds;
  EXPECT_DOUBLE_EQ(untied_seconds / tied_seconds, untied.ParameterCount() / tied.ParameterCount());
}

TEST_F(PerformanceModelTest, LargerGemmsAreMoreEfficient) {
  // Micro-batch 4 has 4x larger GEMMs than micro-batch 1 and the same FLOPs per step.
  EXPECT_LT(Predict(Dims(8, 2, 1, 1, 4)).compute_seconds,
            Predict(Dims(8, 2, 1, 1, 1)).compute_seconds);
}

TEST_F(PerformanceModelTest, ErrorBarFollowsTheParameters) {
  PerformanceParameters params = params_;
  params.relative_error = 0.05;
  const ParallelConfig config = ParallelConfig::FromCheckedDims(Dims(8, 2, 1, 1, 1));
  const PerformanceEstimate e = PredictPerformance(model_, training_, cluster_, config, params);
  EXPECT_EQ(e.relative_error, 0.05);
  EXPECT_DOUBLE_EQ(OptimisticTflopsPerGpu(e, 2), e.model_tflops_per_gpu * std::exp(0.1));
  EXPECT_DOUBLE_EQ(OptimisticTflopsPerGpu(e, 0), e.model_tflops_per_gpu);
  // The fitted parameters carry the fit's own error bar.
  EXPECT_GT(params_.relative_error, 0);
  EXPECT_LT(params_.relative_error, 0.2);
}

TEST(DefaultPerformanceParametersTest, HopperAndAmpereDiffer) {
  const PerformanceParameters a100 = DefaultPerformanceParameters(*FindGpuPreset("a100-80gb"));
  const PerformanceParameters h100 = DefaultPerformanceParameters(*FindGpuPreset("h100-80gb"));
  EXPECT_GT(h100.gemm_half_efficiency_flops, a100.gemm_half_efficiency_flops);
  for (const PerformanceParameters& p : {a100, h100}) {
    EXPECT_GT(p.gemm_efficiency_max, 0);
    EXPECT_LE(p.gemm_efficiency_max, 1);
    EXPECT_GT(p.attention_efficiency, 0);
    EXPECT_LE(p.attention_efficiency, 1);
  }
}

TEST(A100PerformanceTest, PlausibleThroughput) {
  // Measured (data/measured/llama31_8b_4d_abci_tsubame.csv): tp4 pp2 on 16 A100-40GB,
  // 178 TFLOP/s per GPU.
  const ModelSpec model = *FindModelPreset("llama3.1-8b");
  const TrainingSpec training = *TrainingSpec::Create({1024, 8192});
  const ClusterSpec cluster = *ClusterSpec::Create(*FindGpuPreset("a100-40gb"), 2, 8);
  const ParallelConfig config =
      *ParallelConfig::Create(model, training, cluster, {}, Dims(2, 4, 2, 1, 1));
  const PerformanceEstimate e = PredictPerformance(model, training, cluster, config,
                                                   DefaultPerformanceParameters(cluster.gpu()));
  // The A100 parameters are fitted to GPT runs without FlashAttention and predict these
  // FlashAttention runs about a quarter low (docs/estimator.md).
  EXPECT_GT(e.model_tflops_per_gpu, 110);
  EXPECT_LT(e.model_tflops_per_gpu, 230);
}

// Mixtral 8x7B and Qwen3-30B-A3B on 2 nodes of 8 H100s: an MoE layer's time is a dense
// layer's attention with the MoE block (moe_performance.h) in place of the MLP.
class MixtureOfExpertsPerformanceTest : public ::testing::Test {
 protected:
  MixtureOfExpertsPerformanceTest()
      : cluster_(*ClusterSpec::Create(*FindGpuPreset("h100-80gb"), 2, 8)),
        params_(DefaultPerformanceParameters(cluster_.gpu())) {}

  PerformanceEstimate Predict(const ModelSpec& model, const TrainingSpec& training,
                              int64_t ep) const {
    ParallelDims dims = Dims(16, 1, 1, 1, 1);
    dims.ep = ep;
    absl::StatusOr<ParallelConfig> config =
        ParallelConfig::Create(model, training, cluster_, PlacementRules(), dims);
    EXPECT_TRUE(config.ok()) << config.status();
    return PredictPerformance(model, training, cluster_, *config, params_);
  }

  ClusterSpec cluster_;
  PerformanceParameters params_;
};

TEST_F(MixtureOfExpertsPerformanceTest, ExpertParallelDispatchIsItsOwnPart) {
  const ModelSpec model = *FindModelPreset("mixtral-8x7b");
  const TrainingSpec training = *TrainingSpec::Create({256, 4096});
  const PerformanceEstimate ep8 = Predict(model, training, 8);
  EXPECT_GT(ep8.ep_communication_seconds, 0);
  EXPECT_DOUBLE_EQ(ep8.step_time_seconds,
                   ep8.compute_seconds + ep8.pipeline_bubble_seconds +
                       ep8.tp_communication_seconds + ep8.cp_communication_seconds +
                       ep8.ep_communication_seconds + ep8.dp_communication_seconds +
                       ep8.pp_communication_seconds + ep8.optimizer_seconds);
  // 16 micro-batches of 32 MoE layers, each exposing the block's dispatch and combine.
  const MoeLayerSeconds block = PredictMoeLayerSeconds(
      model, training, Dims(16, 1, 1, 1, 1), {8, 1}, MoeRouting(), cluster_,
      cluster_.gpu().peak_bf16_tflops * 1e12, cluster_.gpu().peak_bf16_tflops * 1e12, params_);
  EXPECT_DOUBLE_EQ(ep8.ep_communication_seconds, 16 * 32 * block.exposed_communication);
  // Every expert on every GPU: nothing to dispatch, and more expert weights to keep in sync.
  const PerformanceEstimate ep1 = Predict(model, training, 1);
  EXPECT_EQ(ep1.ep_communication_seconds, 0);
  EXPECT_GT(ep1.dp_communication_seconds, ep8.dp_communication_seconds);
}

TEST_F(MixtureOfExpertsPerformanceTest, ModelFlopsCountTheExpertsATokenPassesThrough) {
  const ModelSpec model = *FindModelPreset("mixtral-8x7b");
  const TrainingSpec training = *TrainingSpec::Create({256, 4096});
  const double h = 4096, L = 32, V = 32000, s = 4096, f_e = 14336;
  const double expected =
      256 * s * (12 * L * h * h * (1 + 8.0 / 32 + s / h) + 18 * L * 2 * f_e * h + 6 * V * h);
  EXPECT_DOUBLE_EQ(ModelFlopsPerStep(model, training), expected);
  // Qwen3's heads are 128 wide with h / a = 64: the attention term scales by a d / h = 2.
  const ModelSpec qwen = *FindModelPreset("qwen3-30b-a3b");
  const double qh = 2048, qL = 48, qV = 151936, qf = 768;
  const double q_expected =
      256 * s *
      (12 * qL * qh * qh * (2 + 4.0 * 128 / qh + 2 * s / qh) + 18 * qL * 8 * qf * qh + 6 * qV * qh);
  EXPECT_NEAR(ModelFlopsPerStep(qwen, training) / q_expected, 1, 1e-12);
}

TEST_F(MixtureOfExpertsPerformanceTest, GroupedGemmBeatsOneGemmPerExpert) {
  const ModelSpec model = *FindModelPreset("qwen3-30b-a3b");
  TrainingOptions options{256, 4096};
  const PerformanceEstimate grouped = Predict(model, *TrainingSpec::Create(options), 8);
  options.moe_grouped_gemm = false;
  const PerformanceEstimate sequential = Predict(model, *TrainingSpec::Create(options), 8);
  // Never faster one by one (with the fitted Hopper curves the grouped time is the larger
  // here, so the two are equal); with the priors, where the grouped curve is the dense one's,
  // the 16 local experts' small GEMMs are slower one by one.
  EXPECT_GE(sequential.compute_seconds, grouped.compute_seconds);
  EXPECT_EQ(sequential.ep_communication_seconds, grouped.ep_communication_seconds);
  const PerformanceParameters priors;
  ParallelDims dims = Dims(16, 1, 1, 1, 1);
  dims.ep = 8;
  const ParallelConfig config =
      *ParallelConfig::Create(model, *TrainingSpec::Create(options), cluster_, {}, dims);
  const TrainingSpec grouped_training = *TrainingSpec::Create({256, 4096});
  EXPECT_GT(PredictPerformance(model, *TrainingSpec::Create(options), cluster_, config, priors)
                .compute_seconds,
            PredictPerformance(model, grouped_training, cluster_, config, priors).compute_seconds);
}

}  // namespace
}  // namespace paratune
