#include "worker/probe/activation_layout.h"

#include <optional>
#include <vector>

#include "estimator/cluster_spec.h"
#include "estimator/memory_model.h"
#include "estimator/moe_memory.h"
#include "estimator/parallel_config.h"
#include "gtest/gtest.h"
#include "worker/probe/fp8_scaling.h"

namespace paratune {
namespace {

struct Case {
  const char* preset;
  int64_t tp;
  int64_t cp;
  bool sequence_parallel;
  bool fp8;
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
    options.fp8 = c.fp8;
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
// the model, never more. In fp8 the model counts the four linears' inputs at 1 byte; the
// probe keeps the attention output in bf16 as well (3 bytes), which the SwiGLU's 2f/h covers.
TEST_P(ActivationLayoutTest, LayerKeepsAtMostWhatTheMemoryModelCounts) {
  const double modelled = estimate_.first_stage.term(MemoryTerm::kActivations) /
                          static_cast<double>(model_->num_layers());
  const double kept = static_cast<double>(LayoutLayerActivations(shapes_, GetParam().fp8).bytes);
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
  const bool fp8 = GetParam().fp8;
  const LayerActivationLayout layer = LayoutLayerActivations(shapes_, fp8);
  EXPECT_EQ(layer.fp8, fp8);
  std::vector<int64_t> offsets = {layer.input,
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
  if (fp8) {
    offsets.push_back(layer.attention_output_fp8);
    offsets.push_back(layer.fp8_scale_inverses);
  }
  int64_t previous = -1;
  for (int64_t offset : offsets) {
    EXPECT_EQ(offset % kActivationAlignment, 0);
    EXPECT_GT(offset, previous);
    previous = offset;
  }
  const int64_t last_end = fp8 ? layer.fp8_scale_inverses + 4 * kFp8ScaleInverseAlignment
                               : layer.swiglu_output + shapes_.tokens * shapes_.ffn * 2;
  EXPECT_GE(layer.bytes, last_end);
  EXPECT_LT(layer.bytes - last_end, kActivationAlignment);
  EXPECT_EQ(LayerInputBytes(shapes_), layer.attention_norm_output - layer.input);
}

// In fp8 the four linears' inputs take one byte per value; nothing else changes.
TEST_P(ActivationLayoutTest, Fp8KeepsTheLinearsInputsInOneByte) {
  if (!GetParam().fp8) GTEST_SKIP() << "bf16";
  const LayerActivationLayout bf16 = LayoutLayerActivations(shapes_, false);
  const LayerActivationLayout fp8 = LayoutLayerActivations(shapes_, true);
  const int64_t norm_output = shapes_.residual_tokens * shapes_.hidden;
  EXPECT_GE(fp8.attention_norm_rstd - fp8.attention_norm_output, norm_output);
  EXPECT_LT(fp8.attention_norm_rstd - fp8.attention_norm_output, norm_output + 256);
  EXPECT_GE(fp8.mlp_norm_rstd - fp8.mlp_norm_output, norm_output);
  EXPECT_LT(fp8.mlp_norm_rstd - fp8.mlp_norm_output, norm_output + 256);
  const int64_t heads = shapes_.tokens * shapes_.query_heads * shapes_.head_dim;
  EXPECT_EQ(fp8.softmax_lse - fp8.attention_output, bf16.softmax_lse - bf16.attention_output);
  EXPECT_GE(fp8.fp8_scale_inverses - fp8.attention_output_fp8, heads);
  EXPECT_GE(fp8.attention_output_fp8 - fp8.swiglu_output, shapes_.tokens * shapes_.ffn);
  EXPECT_LT(fp8.attention_output_fp8 - fp8.swiglu_output, shapes_.tokens * shapes_.ffn + 256);
  EXPECT_LT(fp8.bytes, bf16.bytes);
}

INSTANTIATE_TEST_SUITE_P(Configurations, ActivationLayoutTest,
                         ::testing::Values(Case{"llama3.1-8b", 1, 1, true, false},
                                           Case{"llama3.1-8b", 2, 2, true, false},
                                           Case{"llama3.1-8b", 4, 1, false, false},
                                           Case{"llama3.1-70b", 8, 1, true, false},
                                           Case{"llama3.1-8b", 1, 1, true, true},
                                           Case{"llama3.1-8b", 2, 2, true, true},
                                           Case{"llama3.1-8b", 4, 1, false, true},
                                           Case{"llama3.1-70b", 8, 1, true, true}));

// An MoE layer keeps the MoE block against moe_memory.h's MoeBlockActivationBytes (bf16,
// dropless, balanced), the block's input being the layer's kept mlp_norm_output [R, h]. The
// differences, each named: the router keeps its bf16 logits [R, E] and int32 indices where
// Megatron-LM keeps fp32 scores over E twice (score function and load-balancing loss) and
// int64 indices twice, R (6E + 8k) bytes fewer; the experts' and shared experts' weighted
// SwiGLU keeps its inputs and output, not the SiLU output the estimator also counts (2 bytes
// per inner value, as for the dense layer above); and the estimator counts the shared experts'
// tensors over the rank's R = T / t routed rows where their column-parallel fc1 runs on the T
// rows gathered over the tensor group (a factor t with tp > 1, reported as a suspected
// estimator error). With a capacity factor the experts' tensors are the capacity's N = E etp C
// copies in both.
TEST(MoeBlockActivationLayoutTest, KeepsTheEstimatorsBlockLessNamedTerms) {
  struct MoeCase {
    const char* preset;
    int64_t tp, dp, ep, etp;
    double capacity_factor = 0;
  };
  for (const MoeCase& c :
       {MoeCase{"mixtral-8x7b", 2, 4, 8, 1}, MoeCase{"mixtral-8x7b", 2, 4, 4, 2},
        MoeCase{"mixtral-8x7b", 2, 4, 8, 1, 0.5}, MoeCase{"mixtral-8x7b", 2, 4, 4, 2, 1.25},
        MoeCase{"qwen3-30b-a3b", 1, 8, 8, 1}, MoeCase{"llama4-scout", 4, 4, 16, 1},
        MoeCase{"llama4-scout", 1, 8, 8, 1}}) {
    const ModelSpec model = *FindModelPreset(c.preset);
    TrainingOptions options;
    options.global_batch_size = 2 * c.dp;
    options.seq_len = 4096;
    options.moe_capacity_factor = c.capacity_factor;
    const TrainingSpec training = *TrainingSpec::Create(options);
    ParallelDims dims = MakeParallelDims(c.dp, c.tp, /*pp=*/1, /*cp=*/1, /*micro_batch=*/1);
    dims.ep = c.ep;
    dims.etp = c.etp;
    const ClusterSpec cluster = *ClusterSpec::Create(*FindGpuPreset("h100-80gb"), 1, c.tp * c.dp);
    ASSERT_EQ(CheckRules(model, training, cluster, PlacementRules(), dims), Rejection::kValid)
        << c.preset;
    const ParallelConfig config = ParallelConfig::FromCheckedDims(dims);
    const ShardShapes shapes = ComputeShardShapes(model, training, config);
    const MoeShardShapes moe = *ComputeMoeShardShapes(model, training, config, shapes);
    const double kept = static_cast<double>(LayoutMoeBlockActivations(shapes, moe).bytes) +
                        static_cast<double>(shapes.residual_tokens * shapes.hidden * 2);
    const double estimated = MoeBlockActivationBytes(
        model, training, dims, {c.ep, c.etp}, MoeRoutingOf(training, /*dropless_load_margin=*/1));
    const double R = static_cast<double>(shapes.residual_tokens);
    const double T = static_cast<double>(shapes.tokens);
    const double E = static_cast<double>(model.moe().num_experts);
    const double k = static_cast<double>(model.moe().router_top_k);
    const double N = static_cast<double>(moe.received_copies);
    const double expert_inner = static_cast<double>(model.moe().expert_ffn_hidden_size / c.etp);
    const double shared_inner = static_cast<double>(
        model.moe().num_shared_experts * model.moe().shared_expert_ffn_hidden_size / c.tp);
    const double router_difference = R * (6 * E + 8 * k);
    const double expert_silu = 2 * N * expert_inner;
    // The shared experts' fc1 runs on the T tokens gathered over tp in both; the probe keeps no
    // separate SiLU output (6 bytes per inner value against the estimator's 8).
    const double shared_difference = 2 * T * shared_inner;
    // Each of the block's nine tensors starts on a 256-byte boundary.
    EXPECT_NEAR(kept, estimated - router_difference - expert_silu - shared_difference, 9 * 256)
        << c.preset << " tp" << c.tp << " ep" << c.ep << " etp" << c.etp << " cf"
        << c.capacity_factor;
  }
}

}  // namespace
}  // namespace paratune
