#include "worker/probe/activation_layout.h"

#include <optional>

#include "estimator/cluster_spec.h"
#include "estimator/memory_model.h"
#include "estimator/parallel_config.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

struct Case {
  const char* preset;
  int64_t tp;
  int64_t cp;
  bool sequence_parallel;
};

class ActivationLayoutTest : public ::testing::TestWithParam<Case> {
 protected:
  // A single-stage configuration of the case, whose memory estimate holds one micro-batch of
  // every layer: activations = L x one layer's bytes.
  void SetUp() override {
    const Case& c = GetParam();
    model_ = *FindModelPreset(c.preset);
    TrainingOptions options;
    options.global_batch_size = 4;
    options.seq_len = 8192;
    training_ = *TrainingSpec::Create(options);
    ParallelDims dims;
    dims.tp = c.tp;
    dims.cp = c.cp;
    dims.micro_batch = 2;
    dims.sequence_parallel = c.sequence_parallel;
    const ClusterSpec cluster = *ClusterSpec::Create(*FindGpuPreset("h100-80gb"), 1, c.tp * c.cp);
    const ParallelConfig config =
        *ParallelConfig::Create(*model_, *training_, cluster, PlacementRules(), dims);
    shapes_ = ComputeShardShapes(*model_, *training_, config);
    estimate_ = EstimateMemory(*model_, *training_, cluster, config, MemoryOptions::FormulasOnly());
  }

  std::optional<ModelSpec> model_;
  std::optional<TrainingSpec> training_;
  ShardShapes shapes_;
  MemoryEstimate estimate_;
};

// The probe keeps what Megatron-LM keeps, except that its SwiGLU keeps the gate and up
// projections (4f/h) and its output (2f/h) where the paper counts 8f/h: a little less than
// the model, never more.
TEST_P(ActivationLayoutTest, LayerKeepsAtMostWhatTheMemoryModelCounts) {
  const double modelled = estimate_.first_stage.term(MemoryTerm::kActivations) /
                          static_cast<double>(model_->num_layers());
  const double kept = static_cast<double>(LayoutLayerActivations(shapes_).bytes);
  EXPECT_LE(kept, modelled);
  EXPECT_GE(kept, 0.8 * modelled);
}

TEST_P(ActivationLayoutTest, LossKeepsTheOutputActivationTerm) {
  const double modelled = estimate_.first_stage.term(MemoryTerm::kOutputActivations);
  const double kept = static_cast<double>(LayoutLossActivations(shapes_).bytes);
  // The output term plus the final norm's 1/RMS per row and alignment.
  EXPECT_GE(kept, modelled);
  EXPECT_LE(kept, 1.001 * modelled);
}

TEST_P(ActivationLayoutTest, TensorsAreAlignedAndInsideTheBlock) {
  const LayerActivationLayout layer = LayoutLayerActivations(shapes_);
  const int64_t offsets[] = {layer.input,
                             layer.attention_norm_output,
                             layer.attention_norm_rstd,
                             layer.query,
                             layer.key_value,
                             layer.attention_output,
                             layer.softmax_lse,
                             layer.mlp_input,
                             layer.mlp_norm_output,
                             layer.mlp_norm_rstd,
                             layer.gate_up,
                             layer.swiglu_output};
  int64_t previous = -1;
  for (int64_t offset : offsets) {
    EXPECT_EQ(offset % kActivationAlignment, 0);
    EXPECT_GT(offset, previous);
    previous = offset;
  }
  const int64_t last_end = layer.swiglu_output + shapes_.tokens * shapes_.ffn * 2;
  EXPECT_GE(layer.bytes, last_end);
  EXPECT_LT(layer.bytes - last_end, kActivationAlignment);
  EXPECT_EQ(LayerInputBytes(shapes_), layer.attention_norm_output - layer.input);
}

INSTANTIATE_TEST_SUITE_P(Configurations, ActivationLayoutTest,
                         ::testing::Values(Case{"llama3.1-8b", 1, 1, true},
                                           Case{"llama3.1-8b", 2, 2, true},
                                           Case{"llama3.1-8b", 4, 1, false},
                                           Case{"llama3.1-70b", 8, 1, true}));

}  // namespace
}  // namespace paratune
