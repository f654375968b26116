#include "estimator/performance_fit.h"

#include <cmath>

#include "estimator/performance_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;

class PerformanceFitTest : public ::testing::Test {
 protected:
  // Llama-3.1-8B, s 8192, global batch 256, on 2 nodes of 8 H100-80GB.
  PerformanceFitTest()
      : model_(*FindModelPreset("llama3.1-8b")),
        training_(*TrainingSpec::Create({256, 8192})),
        cluster_(*ClusterSpec::Create(*FindGpuPreset("h100-80gb"), 2, 8)) {}

  ParallelConfig Config(int64_t dp, int64_t tp, int64_t pp, int64_t cp, int64_t b) const {
    return *ParallelConfig::Create(model_, training_, cluster_, {},
                                   MakeParallelDims(dp, tp, pp, cp, b));
  }

  double Predict(const ParallelConfig& config, const PerformanceParameters& params) const {
    return PredictPerformance(model_, training_, cluster_, config, params).step_time_seconds;
  }

  PerformanceObservation Observe(const ParallelConfig& config, double step_time_seconds,
                                 double weight = 1) const {
    return {model_, training_, cluster_, config, step_time_seconds, weight};
  }

  // Observations of varied configurations made by `truth`.
  std::vector<PerformanceObservation> Synthetic(const PerformanceParameters& truth) const {
    std::vector<PerformanceObservation> observations;
    for (const ParallelConfig& config :
         {Config(16, 1, 1, 1, 1), Config(8, 2, 1, 1, 1), Config(4, 4, 1, 1, 2),
          Config(2, 8, 1, 1, 1), Config(4, 2, 2, 1, 1), Config(2, 2, 4, 1, 1),
          Config(8, 1, 1, 2, 1), Config(2, 2, 1, 4, 1), Config(1, 8, 2, 1, 1),
          Config(4, 1, 2, 2, 2)}) {
      observations.push_back(Observe(config, Predict(config, truth)));
    }
    return observations;
  }

  ModelSpec model_;
  TrainingSpec training_;
  ClusterSpec cluster_;
};

TEST_F(PerformanceFitTest, RecoversThePredictionsOfKnownParameters) {
  PerformanceParameters truth;
  truth.gemm_efficiency_max = 0.62;
  truth.attention_efficiency = 0.35;
  truth.tp_overlap = 0.3;
  truth.dp_overlap = 0.5;
  truth.pp_overlap = 0.2;
  const std::vector<PerformanceObservation> observations = Synthetic(truth);
  const PerformanceParameters start;
  ASSERT_GT(MeanSquaredLogError(observations, start), 1e-3);

  absl::StatusOr<FitResult> fit = FitPerformanceParameters(observations, start);
  ASSERT_TRUE(fit.ok()) << fit.status();
  EXPECT_LT(fit->objective_end, fit->objective_start);
  EXPECT_LT(fit->rms_log_error, 0.01);
  EXPECT_NEAR(fit->rms_log_error * fit->rms_log_error,
              MeanSquaredLogError(observations, fit->params), 1e-12);
  EXPECT_GT(fit->sweeps, 0);
  EXPECT_GE(fit->evaluations, fit->sweeps);
  // A configuration not among the observations is predicted as the truth predicts it.
  const ParallelConfig unseen = Config(2, 4, 2, 1, 1);
  EXPECT_NEAR(Predict(unseen, fit->params) / Predict(unseen, truth), 1, 0.03);
}

TEST_F(PerformanceFitTest, FieldsStayWithinTheirBounds) {
  PerformanceParameters start;
  start.tp_overlap = 2;  // out of range: clipped before fitting
  std::vector<PerformanceObservation> observations = Synthetic(PerformanceParameters());
  for (PerformanceObservation& observation : observations) observation.step_time_seconds *= 5;
  absl::StatusOr<FitResult> fit = FitPerformanceParameters(observations, start);
  ASSERT_TRUE(fit.ok()) << fit.status();
  for (const FittedField& field : FittedFields()) {
    EXPECT_GE(fit->params.*field.field, field.lower) << field.name;
    EXPECT_LE(fit->params.*field.field, field.upper) << field.name;
  }
}

TEST_F(PerformanceFitTest, NoObservationsReturnTheStart) {
  PerformanceParameters start;
  start.gemm_efficiency_max = 0.5;
  absl::StatusOr<FitResult> fit = FitPerformanceParameters({}, start, SearchRefitOptions());
  ASSERT_TRUE(fit.ok()) << fit.status();
  EXPECT_EQ(fit->params.gemm_efficiency_max, 0.5);
  EXPECT_EQ(fit->sweeps, 0);
  EXPECT_EQ(MeanSquaredLogError({}, start), 0);
}

TEST_F(PerformanceFitTest, PriorKeepsOneObservationFromDraggingEverything) {
  const PerformanceParameters start = DefaultPerformanceParameters(cluster_.gpu());
  const ParallelConfig probed = Config(8, 2, 1, 1, 1);
  const double predicted = Predict(probed, start);
  const std::vector<PerformanceObservation> one = {Observe(probed, 1.2 * predicted)};

  FitOptions free = SearchRefitOptions();
  free.prior_weight = 0;
  absl::StatusOr<FitResult> unregularised = FitPerformanceParameters(one, start, free);
  absl::StatusOr<FitResult> refit = FitPerformanceParameters(one, start, SearchRefitOptions());
  ASSERT_TRUE(unregularised.ok() && refit.ok());
  // Without a prior the one measurement is matched; with it the prediction moves part of the
  // way, as a MAP estimate with sigma 0.05 and tau 0.1 does.
  EXPECT_NEAR(Predict(probed, unregularised->params) / (1.2 * predicted), 1, 0.01);
  const double moved = Predict(probed, refit->params) / predicted;
  EXPECT_GT(moved, 1.05);
  EXPECT_LT(moved, 1.19);
}

TEST_F(PerformanceFitTest, WeightsSplitTheDifference) {
  // Two measurements of one configuration, 3:1: the fit predicts their weighted geometric mean.
  const PerformanceParameters start = DefaultPerformanceParameters(cluster_.gpu());
  const ParallelConfig config = Config(8, 2, 1, 1, 1);
  const double t = Predict(config, start);
  absl::StatusOr<FitResult> fit =
      FitPerformanceParameters({Observe(config, 1.1 * t, 3), Observe(config, 1.3 * t, 1)}, start);
  ASSERT_TRUE(fit.ok()) << fit.status();
  const double expected = t * std::exp((3 * std::log(1.1) + std::log(1.3)) / 4);
  EXPECT_NEAR(Predict(config, fit->params) / expected, 1, 1e-3);
}

TEST_F(PerformanceFitTest, Deterministic) {
  const std::vector<PerformanceObservation> observations = Synthetic(PerformanceParameters());
  PerformanceParameters start;
  start.gemm_efficiency_max = 0.5;
  absl::StatusOr<FitResult> first = FitPerformanceParameters(observations, start);
  absl::StatusOr<FitResult> second = FitPerformanceParameters(observations, start);
  ASSERT_TRUE(first.ok() && second.ok());
  for (const FittedField& field : FittedFields()) {
    EXPECT_EQ(first->params.*field.field, second->params.*field.field) << field.name;
  }
}

TEST_F(PerformanceFitTest, Fp8FieldsMoveOnlyForFp8Observations) {
  PerformanceParameters truth;
  truth.fp8_gemm_efficiency_max = 0.5;
  truth.gemm_efficiency_max = 0.6;
  const PerformanceParameters start;
  // bf16 observations leave the fp8 fields at their start.
  absl::StatusOr<FitResult> bf16 = FitPerformanceParameters(Synthetic(truth), start);
  ASSERT_TRUE(bf16.ok()) << bf16.status();
  for (const FittedField& field : Fp8FittedFields()) {
    EXPECT_EQ(bf16->params.*field.field, start.*field.field) << field.name;
  }
  // fp8 observations move them: by default with the bf16 fields, or alone when asked.
  TrainingOptions options = training_.options();
  options.fp8 = true;
  const TrainingSpec fp8 = *TrainingSpec::Create(options);
  std::vector<PerformanceObservation> observations;
  for (const ParallelConfig& config : {Config(16, 1, 1, 1, 1), Config(8, 2, 1, 1, 1),
                                       Config(4, 4, 1, 1, 2), Config(8, 1, 1, 2, 4)}) {
    const double seconds =
        PredictPerformance(model_, fp8, cluster_, config, truth).step_time_seconds;
    observations.push_back({model_, fp8, cluster_, config, seconds, 1});
  }
  absl::StatusOr<FitResult> joint = FitPerformanceParameters(observations, start);
  ASSERT_TRUE(joint.ok()) << joint.status();
  EXPECT_NE(joint->params.fp8_gemm_efficiency_max, start.fp8_gemm_efficiency_max);
  FitOptions fp8_only;
  fp8_only.fields = Fp8FittedFields();
  absl::StatusOr<FitResult> alone = FitPerformanceParameters(observations, start, fp8_only);
  ASSERT_TRUE(alone.ok()) << alone.status();
  EXPECT_LT(alone->rms_log_error, 0.01);
  for (const FittedField& field : FittedFields()) {
    EXPECT_EQ(alone->params.*field.field, start.*field.field) << field.name;
  }
}

TEST_F(PerformanceFitTest, TorchTitanFieldsMoveOnlyForTorchTitanObservations) {
  PerformanceParameters truth;
  truth.torchtitan_eager_compute_efficiency = 0.6;
  truth.torchtitan_compiled_compute_efficiency = 0.7;
  truth.torchtitan_attention_efficiency = 0.8;
  const PerformanceParameters start;
  absl::StatusOr<FitResult> megatron = FitPerformanceParameters(Synthetic(truth), start);
  ASSERT_TRUE(megatron.ok()) << megatron.status();
  for (const FittedField& field : TorchTitanFittedFields()) {
    EXPECT_EQ(megatron->params.*field.field, start.*field.field) << field.name;
  }
  TrainingOptions options = training_.options();
  options.framework = Framework::kTorchTitan;
  std::vector<PerformanceObservation> observations;
  // Two sequence lengths, so that the attention's share of the compute differs between runs
  // and its efficiency can be told from the rest's.
  for (const int64_t seq_len : {8192, 65536}) {
    options.seq_len = seq_len;
    for (const bool compiled : {false, true}) {
      options.torch_compile = compiled;
      const TrainingSpec titan = *TrainingSpec::Create(options);
      for (const ParallelConfig& config : {Config(16, 1, 1, 1, 1), Config(8, 2, 1, 1, 1)}) {
        const double seconds =
            PredictPerformance(model_, titan, cluster_, config, truth).step_time_seconds;
        observations.push_back({model_, titan, cluster_, config, seconds, 1});
      }
    }
  }
  FitOptions titan_only;
  titan_only.fields = TorchTitanFittedFields();
  absl::StatusOr<FitResult> alone = FitPerformanceParameters(observations, start, titan_only);
  ASSERT_TRUE(alone.ok()) << alone.status();
  EXPECT_NEAR(alone->params.torchtitan_eager_compute_efficiency, 0.6, 0.01);
  EXPECT_NEAR(alone->params.torchtitan_compiled_compute_efficiency, 0.7, 0.01);
  EXPECT_NEAR(alone->params.torchtitan_attention_efficiency, 0.8, 0.01);
  // A default refit of TorchTitan observations moves the dense fields, not these.
  absl::StatusOr<FitResult> refit = FitPerformanceParameters(observations, start);
  ASSERT_TRUE(refit.ok()) << refit.status();
  for (const FittedField& field : TorchTitanFittedFields()) {
    EXPECT_EQ(refit->params.*field.field, start.*field.field) << field.name;
  }
}

TEST_F(PerformanceFitTest, MoeFieldsMoveOnlyForMixtureOfExpertsObservations) {
  PerformanceParameters truth;
  truth.grouped_gemm_half_efficiency_tokens = 1024;
  truth.all_to_all_network_efficiency = 0.5;
  const PerformanceParameters start;
  // Dense observations leave the MoE fields at their start.
  absl::StatusOr<FitResult> dense = FitPerformanceParameters(Synthetic(truth), start);
  ASSERT_TRUE(dense.ok()) << dense.status();
  for (const FittedField& field : MoeFittedFields()) {
    EXPECT_EQ(dense->params.*field.field, start.*field.field) << field.name;
  }
  // Mixtral 8x7B on the 16 GPUs, with and without expert parallelism across nodes: its MoE
  // fields alone reproduce the truth's step times; the dense fields stay at their start.
  const ModelSpec moe = *FindModelPreset("mixtral-8x7b");
  const TrainingSpec training = *TrainingSpec::Create({256, 4096});
  std::vector<PerformanceObservation> observations;
  for (int64_t ep : {2, 4, 8}) {
    for (int64_t dp : {16, 8}) {
      ParallelDims dims = MakeParallelDims(dp, 16 / dp, 1, 1, 1);
      dims.ep = ep;
      const ParallelConfig config =
          *ParallelConfig::Create(moe, training, cluster_, PlacementRules(), dims);
      const double seconds =
          PredictPerformance(moe, training, cluster_, config, truth).step_time_seconds;
      observations.push_back({moe, training, cluster_, config, seconds, 1});
    }
  }
  FitOptions moe_only;
  moe_only.fields = MoeFittedFields();
  absl::StatusOr<FitResult> alone = FitPerformanceParameters(observations, start, moe_only);
  ASSERT_TRUE(alone.ok()) << alone.status();
  EXPECT_LT(alone->rms_log_error, 0.01);
  for (const FittedField& field : FittedFields()) {
    EXPECT_EQ(alone->params.*field.field, start.*field.field) << field.name;
  }
  absl::StatusOr<FitResult> joint = FitPerformanceParameters(observations, start);
  ASSERT_TRUE(joint.ok()) << joint.status();
  EXPECT_NE(joint->params.grouped_gemm_half_efficiency_tokens,
            start.grouped_gemm_half_efficiency_tokens);
}

TEST_F(PerformanceFitTest, BadInputNamesTheField) {
  const ParallelConfig config = Config(8, 2, 1, 1, 1);
  absl::StatusOr<FitResult> fit =
      FitPerformanceParameters({Observe(config, 1), Observe(config, 0)}, {});
  EXPECT_EQ(fit.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(fit.status().message(), HasSubstr("observations[1].step_time_seconds (0)"));

  fit = FitPerformanceParameters({Observe(config, 1, std::nan(""))}, {});
  EXPECT_EQ(fit.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(fit.status().message(), HasSubstr("observations[0].weight (nan)"));

  FitOptions options;
  options.prior_weight = -1;
  fit = FitPerformanceParameters({Observe(config, 1)}, {}, options);
  EXPECT_THAT(fit.status().message(), HasSubstr("options.prior_weight (-1)"));
  options = FitOptions();
  options.final_step = 0;
  fit = FitPerformanceParameters({Observe(config, 1)}, {}, options);
  EXPECT_THAT(fit.status().message(), HasSubstr("options.final_step (0)"));
  options = FitOptions();
  options.max_sweeps = 0;
  fit = FitPerformanceParameters({Observe(config, 1)}, {}, options);
  EXPECT_THAT(fit.status().message(), HasSubstr("options.max_sweeps (0)"));
}

}  // namespace
}  // namespace paratune
