#include "estimator/moe_memory.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

ModelSpec Preset(const std::string& name) {
  absl::StatusOr<ModelSpec> model = FindModelPreset(name);
  EXPECT_TRUE(model.ok()) << model.status();
  return *model;
}

TrainingSpec Training(int64_t seq_len, bool fp8 = false, bool fp8_param_gather = false) {
  TrainingOptions options;
  options.global_batch_size = 1024;
  options.seq_len = seq_len;
  options.fp8 = fp8;
  options.fp8_param_gather = fp8_param_gather;
  absl::StatusOr<TrainingSpec> training = TrainingSpec::Create(options);
  EXPECT_TRUE(training.ok()) << training.status();
  return *training;
}

ParallelDims Dims(int64_t dp, int64_t tp, int64_t pp, int64_t cp, int64_t vp = 1) {
  ParallelDims dims = MakeParallelDims(dp, tp, pp, cp, /*micro_batch=*/1);
  dims.virtual_pipeline = vp;
  return dims;
}

// A configuration of both sides: the attention side's dims and the expert side.
struct Config {
  ParallelDims dims;
  ExpertParallelism expert;
};

// Parameters of everything but the MoE blocks (embedding, LM head, final norm, dense layers,
// and the attention and norms of the MoE layers), from ModelSpec's own counts.
double NonMoeBlockParameters(const ModelSpec& model) {
  const double h = static_cast<double>(model.hidden_size());
  const double v = static_cast<double>(model.vocab_size());
  const double moe_layers = static_cast<double>(model.MoeLayerCount());
  const double dense_layers = static_cast<double>(model.num_layers()) - moe_layers;
  return h * v * (model.tied_embeddings() ? 1 : 2) + h +
         dense_layers * model.LayerParameterCount() +
         moe_layers * (model.AttentionParameterCount() + 2 * h);
}

// Summed over the distinct shards of the world, the weights of every stage are the model's
// once: each stage's routed experts are split into ep x etp distinct shards (the expert
// data-parallel ranks hold copies), its router is one copy on every rank, its shared experts
// tp distinct shards.
void ExpectWeightsOverDistinctShardsAreTheModels(const std::string& name,
                                                 const std::vector<Config>& configs) {
  const ModelSpec model = Preset(name);
  const TrainingSpec training = Training(4096);
  for (const Config& config : configs) {
    const ParallelDims& dims = config.dims;
    const ExpertParallelism& expert = config.expert;
    double moe_bytes = 0;
    int64_t moe_layers = 0;
    for (int64_t stage = 0; stage < dims.pp; ++stage) {
      const int64_t layers = MoeLayersOnStage(model, stage, dims.pp, dims.virtual_pipeline);
      moe_layers += layers;
      const double distinct_expert_shards = static_cast<double>(expert.ep * expert.etp);
      const double distinct_shared_shards = static_cast<double>(dims.tp);
      moe_bytes +=
          distinct_expert_shards *
              ExpertModelStates(model, training, dims, expert, layers).weights +
          RouterModelStates(model, training, dims, layers).weights +
          distinct_shared_shards * SharedExpertModelStates(model, training, dims, layers).weights;
    }
    const std::string where = name + " tp" + std::to_string(dims.tp) + " pp" +
                              std::to_string(dims.pp) + " vp" +
                              std::to_string(dims.virtual_pipeline) + " ep" +
                              std::to_string(expert.ep) + " etp" + std::to_string(expert.etp);
    EXPECT_EQ(moe_layers, model.MoeLayerCount()) << where;
    EXPECT_EQ(2 * NonMoeBlockParameters(model) + moe_bytes, 2 * model.ParameterCount()) << where;
  }
}

TEST(MoeMemoryTest, WeightsOverTheWorldsDistinctShardsAreTwiceTheParameterCount) {
  ExpectWeightsOverDistinctShardsAreTheModels("mixtral-8x7b",
                                              {{Dims(8, 1, 1, 1), {8, 1}},
                                               {Dims(8, 2, 4, 1), {4, 2}},
                                               {Dims(4, 4, 2, 1), {2, 1}},
                                               {Dims(8, 2, 4, 1, /*vp=*/2), {8, 2}}});
  // 94 layers: pp 4 and 8 split them unevenly (23, 24, 24, 23 and 11, 12 x 6, 11).
  ExpectWeightsOverDistinctShardsAreTheModels("qwen3-235b-a22b", {{Dims(32, 1, 1, 1), {32, 1}},
                                                                  {Dims(16, 2, 2, 1), {16, 2}},
                                                                  {Dims(16, 2, 4, 2), {64, 1}},
                                                                  {Dims(8, 4, 8, 1), {8, 4}}});
  // Shared experts (split over tp) and, in Maverick, MoE layers on every other layer only.
  ExpectWeightsOverDistinctShardsAreTheModels(
      "llama4-scout", {{Dims(8, 2, 4, 1), {16, 1}}, {Dims(4, 4, 2, 1), {4, 4}}});
  ExpectWeightsOverDistinctShardsAreTheModels(
      "llama4-maverick", {{Dims(8, 2, 4, 1, /*vp=*/2), {16, 1}}, {Dims(16, 4, 3, 1), {64, 1}}});
}

// Megatron-LM core_v0.19.0, megatron/training/theoretical_memory_usage.py,
// compute_weight_and_optimizer_memory, written out for the MoE parts of its "most loaded
// shard": bf16 weights, fp32 gradients and the distributed optimizer, 6 + 12 / dp bytes per
// parameter with dp the data-parallel size of the parameter's group.
struct MegatronArgs {
  double hidden_size, moe_ffn_hidden_size, num_experts, moe_shared_expert_intermediate_size;
  double num_moe_layers, world_size, tensor_model_parallel_size, pipeline_model_parallel_size;
  double data_parallel_size, expert_model_parallel_size, expert_tensor_parallel_size;
};

struct MegatronMoeBytes {
  double routed_experts, router, shared_experts;
};

MegatronMoeBytes MegatronMoeWeightAndOptimizerBytes(const MegatronArgs& args) {
  const double gated_linear_multiplier = 3.0 / 2;  // args.swiglu
  const double routed_expert_params =
      2 * args.hidden_size * args.moe_ffn_hidden_size * args.num_experts * gated_linear_multiplier;
  const double shared_expert_params =
      2 * args.hidden_size * args.moe_shared_expert_intermediate_size * gated_linear_multiplier;
  const double router_params = args.hidden_size * args.num_experts;  // no add_bias_linear
  const double expert_data_parallel_size =
      args.world_size / (args.expert_tensor_parallel_size * args.expert_model_parallel_size *
                         args.pipeline_model_parallel_size);
  const auto num_bytes_per_parameter = [](double data_parallel_size) {
    return 6 + 12 / data_parallel_size;
  };
  const double pp = args.pipeline_model_parallel_size;
  MegatronMoeBytes bytes;
  bytes.routed_experts = routed_expert_params * args.num_moe_layers / pp /
                         (args.expert_tensor_parallel_size * args.expert_model_parallel_size) *
                         num_bytes_per_parameter(expert_data_parallel_size);
  bytes.router =
      router_params * args.num_moe_layers / pp * num_bytes_per_parameter(args.data_parallel_size);
  bytes.shared_experts = shared_expert_params * args.num_moe_layers / pp /
                         args.tensor_model_parallel_size *
                         num_bytes_per_parameter(args.data_parallel_size);
  return bytes;
}

void ExpectMegatronClosedForm(const std::string& name, const Config& config,
                              const MegatronArgs& args) {
  const ModelSpec model = Preset(name);
  const TrainingSpec training = Training(4096);
  const ParallelDims& dims = config.dims;
  const ExpertParallelism& expert = config.expert;
  const int64_t layers = MoeLayersOnStage(model, 0, dims.pp, dims.virtual_pipeline);
  const MegatronMoeBytes megatron = MegatronMoeWeightAndOptimizerBytes(args);
  EXPECT_DOUBLE_EQ(ExpertModelStates(model, training, dims, expert, layers).Total(),
                   megatron.routed_experts)
      << name;
  EXPECT_DOUBLE_EQ(RouterModelStates(model, training, dims, layers).Total(), megatron.router)
      << name;
  EXPECT_DOUBLE_EQ(SharedExpertModelStates(model, training, dims, layers).Total(),
                   megatron.shared_experts)
      << name;
}

TEST(MoeMemoryTest, ModelStatesMatchMegatronTheoreticalMemoryUsage) {
  // Mixtral 8x7B on 64 GPUs, tp 2 pp 4 dp 8, ep 8: edp = 64 / (1 x 8 x 4) = 2.
  ExpectMegatronClosedForm("mixtral-8x7b", {Dims(8, 2, 4, 1), {8, 1}},
                           {4096, 14336, 8, 0, 32, 64, 2, 4, 8, 8, 1});
  // Qwen3-235B-A22B on 256 GPUs, tp 4 pp 2 dp 32, ep 16 etp 2: edp = 256 / (2 x 16 x 2) = 4.
  ExpectMegatronClosedForm("qwen3-235b-a22b", {Dims(32, 4, 2, 1), {16, 2}},
                           {4096, 1536, 128, 0, 94, 256, 4, 2, 32, 16, 2});
  // Llama 4 Scout (one shared expert of 8192) on 64 GPUs, tp 4 pp 4 dp 4, ep 16: edp 1.
  ExpectMegatronClosedForm("llama4-scout", {Dims(4, 4, 4, 1), {16, 1}},
                           {5120, 8192, 16, 8192, 48, 64, 4, 4, 4, 16, 1});
}

TEST(MoeMemoryTest, ExpertDataParallelSizeFoldsTheStagesWorld) {
  EXPECT_EQ(ExpertDataParallelSize(Dims(8, 2, 4, 2), {8, 1}), 4);    // 2 x 2 x 8 / 8
  EXPECT_EQ(ExpertDataParallelSize(Dims(16, 2, 8, 1), {32, 1}), 1);  // 2 x 16 / 32
  EXPECT_EQ(ExpertDataParallelSize(Dims(4, 8, 1, 1), {4, 2}), 4);    // 8 x 4 / 8
}

TEST(MoeMemoryTest, MoeLayersOnStageFollowsThePipelineLayout) {
  const ModelSpec maverick = Preset("llama4-maverick");  // layers 1, 3, ..., 47
  for (int64_t stage = 0; stage < 4; ++stage) {
    EXPECT_EQ(MoeLayersOnStage(maverick, stage, 4, 1), 6);
  }
  const ModelSpec qwen = Preset("qwen3-235b-a22b");  // 94 layers on pp 4: 23, 24, 24, 23
  EXPECT_EQ(MoeLayersOnStage(qwen, 0, 4, 1), 23);
  EXPECT_EQ(MoeLayersOnStage(qwen, 1, 4, 1), 24);
  EXPECT_EQ(MoeLayersOnStage(qwen, 3, 4, 1), 23);

  // 16 layers, the first 3 dense, pp 2 x vp 2 (chunks of 4): stage 0 holds layers 0-3 and
  // 8-11, of which 3 and 8-11 are MoE; stage 1 holds layers 4-7 and 12-15.
  ModelDimensions dims{1024, 4096, 16, 8, 8, 32000, false};
  dims.moe = {8, 2, 1024, 0, 0, 1, 3};
  const absl::StatusOr<ModelSpec> model = ModelSpec::Create("first-dense", dims);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(MoeLayersOnStage(*model, 0, 2, 2), 5);
  EXPECT_EQ(MoeLayersOnStage(*model, 1, 2, 2), 8);

  EXPECT_EQ(MoeLayersOnStage(Preset("llama3.1-8b"), 0, 2, 1), 0);
}

// Mixtral 8x7B, s 4096, b 1, tp 2 (with SP), ep 8: T = 2048 tokens per rank, each routed to 2
// of 8 experts.
class MixtralActivationsTest : public ::testing::Test {
 protected:
  const ModelSpec model_ = Preset("mixtral-8x7b");
  const TrainingSpec training_ = Training(4096);
  const ParallelDims dims_ = Dims(8, 2, 4, 1);
  const ExpertParallelism expert_{8, 1};
  const double h_ = 4096, f_e_ = 14336, experts_ = 8, top_k_ = 2, tokens_ = 4096.0 / 2;
};

TEST_F(MixtralActivationsTest, BlockActivationsHaveTheirClosedForm) {
  const MoeRouting dropless;
  EXPECT_EQ(MoeTokensPerRank(training_, dims_), tokens_);
  const double received = tokens_ * top_k_;  // T k etp, the even share
  EXPECT_EQ(RoutedTokensPerRank(model_, training_, dims_, expert_, dropless), received);
  const double input = 2 * h_ * tokens_;
  const double router = tokens_ * (8 * experts_ + 16 * top_k_);
  const double routed = received * (2 * h_ + 8 * f_e_ + 4);
  EXPECT_EQ(MoeInputActivationBytes(model_, training_, dims_), input);
  EXPECT_EQ(RouterActivationBytes(model_, training_, dims_), router);
  EXPECT_EQ(RoutedExpertActivationBytes(model_, training_, dims_, expert_, dropless), routed);
  EXPECT_EQ(SharedExpertActivationBytes(model_, training_, dims_), 0);
  EXPECT_EQ(MoeBlockActivationBytes(model_, training_, dims_, expert_, dropless),
            input + router + routed);
}

TEST_F(MixtralActivationsTest, DroplessMarginScalesOnlyTheRoutedTokens) {
  MoeRouting balanced;
  MoeRouting margin;
  margin.dropless_load_margin = 1.25;
  EXPECT_EQ(RoutedExpertActivationBytes(model_, training_, dims_, expert_, margin),
            1.25 * RoutedExpertActivationBytes(model_, training_, dims_, expert_, balanced));
  EXPECT_EQ(MoeBlockActivationBytes(model_, training_, dims_, expert_, margin) -
                MoeBlockActivationBytes(model_, training_, dims_, expert_, balanced),
            0.25 * RoutedExpertActivationBytes(model_, training_, dims_, expert_, balanced));
}

TEST_F(MixtralActivationsTest, CapacityFactorBoundsEachExpertsTokens) {
  const auto routed_tokens = [&](double capacity_factor, int64_t etp) {
    MoeRouting routing;
    routing.capacity_factor = capacity_factor;
    return RoutedTokensPerRank(model_, training_, dims_, {8, etp}, routing);
  };
  // Capacity C = ceil(T k cf / E) from each of etp x ep ranks for each of the E / ep local
  // experts: E etp C.
  EXPECT_EQ(routed_tokens(1.0, 1), tokens_ * top_k_);  // C = 512, the dropless even share
  EXPECT_EQ(routed_tokens(2.0, 1), 2 * tokens_ * top_k_);
  EXPECT_EQ(routed_tokens(1.1, 1), experts_ * 564);  // ceil(563.2)
  EXPECT_EQ(routed_tokens(1.0, 2), 2 * tokens_ * top_k_);

  MoeRouting capacity;
  capacity.capacity_factor = 1.1;
  // One local expert, etp 1: sent E C, the experts' E C outputs and E C received back.
  EXPECT_EQ(DispatcherBufferBytes(model_, training_, dims_, expert_, capacity),
            2 * h_ * 3 * experts_ * 564);
}

TEST_F(MixtralActivationsTest, DispatcherBuffersHaveTheirClosedForm) {
  const double routed = tokens_ * top_k_;  // T k, sent by each rank
  MoeRouting all_to_all;
  // ep 8 (one local expert), etp 1: the received tokens are the fc1 input; sent T k, then the
  // combine: the experts' N = T k outputs sent back and T k received.
  EXPECT_EQ(DispatcherBufferBytes(model_, training_, dims_, expert_, all_to_all),
            2 * h_ * (routed + routed + routed));
  // ep 4 (two local experts), etp 2: N = 2 T k. Sent T k, received N / 2; preprocessing the
  // combine holds the N outputs, N sorted back and N / 2 reduce-scattered.
  const double n = 2 * routed;
  EXPECT_EQ(DispatcherBufferBytes(model_, training_, dims_, {4, 2}, all_to_all),
            2 * h_ * (routed + n / 2 + (n + n + n / 2)));

  MoeRouting all_gather;
  all_gather.dispatcher = TokenDispatcher::kAllGather;
  const double gathered = tokens_ * 8;  // T x etp x ep
  // Gathered tokens and unpermuted output (bf16), fp32 probabilities, the local experts' map,
  // and the fp32 copy reduce-scattered (larger than the experts' T k outputs).
  EXPECT_EQ(DispatcherBufferBytes(model_, training_, dims_, expert_, all_gather),
            gathered * (4 * h_ + 4 * experts_ + experts_ / 8) + 4 * h_ * gathered);
  // ep = etp = 1 gathers nothing: the experts' outputs and the unpermuted tokens.
  EXPECT_EQ(DispatcherBufferBytes(model_, training_, dims_, {1, 1}, all_gather),
            2 * h_ * (routed + tokens_));
}

TEST_F(MixtralActivationsTest, StageTermsFollowTheRecomputeMode) {
  const MoeRouting routing;
  const double block = MoeBlockActivationBytes(model_, training_, dims_, expert_, routing);
  // Stage 0 of pp 4: 8 MoE layers, 4 micro-batches in flight.
  const MoeMemoryTerms kept =
      EstimateMoeStageMemory(model_, training_, dims_, expert_, routing, 1024, 8, 8 * 4);
  EXPECT_EQ(kept.activations, 32 * block);
  EXPECT_EQ(kept.recompute_working_set, 0);
  EXPECT_EQ(kept.experts.Total(), ExpertModelStates(model_, training_, dims_, expert_, 8).Total());
  EXPECT_EQ(kept.fp8_weight_copies, 0);
  EXPECT_EQ(kept.fp8_scaling_state, 0);
  EXPECT_EQ(kept.dispatcher_buffers,
            DispatcherBufferBytes(model_, training_, dims_, expert_, routing));

  ParallelDims full = dims_;
  full.recompute = Recompute::kFull;
  const MoeMemoryTerms recomputed =
      EstimateMoeStageMemory(model_, training_, full, expert_, routing, 1024, 8, 8 * 4);
  EXPECT_EQ(recomputed.activations, 0);
  EXPECT_EQ(recomputed.recompute_working_set, block);
  EXPECT_EQ(recomputed.experts.Total(), kept.experts.Total());
  EXPECT_EQ(recomputed.router.Total(), kept.router.Total());
  EXPECT_EQ(kept.activations - recomputed.recompute_working_set, 31 * block);

  const MoeMemoryTerms none =
      EstimateMoeStageMemory(model_, training_, dims_, expert_, routing, 1024, 0, 0);
  EXPECT_EQ(none.experts.Total() + none.router.Total() + none.shared_experts.Total() +
                none.activations + none.dispatcher_buffers,
            0);
}

// A non-gated MoE (GELU experts, as GPT-style MoE models): two f_e x h matrices per expert and
// 4 bytes per token and inner value, as memory_model counts a non-gated MLP.
TEST(MoeMemoryTest, NonGatedExpertsHaveTwoMatricesAndFourBytesPerInnerValue) {
  ModelDimensions dims{2048, 8192, 8, 16, 16, 32000, false, /*gated_mlp=*/false};
  dims.moe = {16, 4, 1024, 1, 2048, 1, 0};
  const absl::StatusOr<ModelSpec> model = ModelSpec::Create("gelu-moe", dims);
  ASSERT_TRUE(model.ok()) << model.status();
  const TrainingSpec training = Training(2048);
  const ParallelDims parallel = Dims(4, 2, 1, 1);  // T = 1024
  const ExpertParallelism expert{4, 2};
  const double h = 2048, f_e = 1024, f_s = 2048, tokens = 1024, received = tokens * 4 * 2;
  EXPECT_EQ(ExpertParameters(*model, expert, 8), 8 * (16.0 / 4) * 2 * f_e * h / 2);
  EXPECT_EQ(SharedExpertParameters(*model, parallel, 8), 8 * 2 * f_s * h / 2);
  EXPECT_EQ(RoutedExpertActivationBytes(*model, training, parallel, expert, MoeRouting()),
            received * (2 * h + 4 * f_e / 2 + 4));
  // The shared expert's fc1 sees the 2 T tokens gathered over tp 2.
  EXPECT_EQ(SharedExpertActivationBytes(*model, training, parallel), 2 * tokens * 4 * f_s / 2);
}

// Llama 4 Scout in fp8 (shared expert, top-1 of 16), s 8192, tp 4 cp 2 (T = 1024), ep 4 etp 2.
TEST(MoeMemoryTest, Fp8SavesLinearInputsAndAddsExpertCopiesAndScalingState) {
  const ModelSpec model = Preset("llama4-scout");
  const TrainingSpec fp8 = Training(8192, /*fp8=*/true);
  const ParallelDims dims = Dims(4, 4, 4, 2);
  const ExpertParallelism expert{4, 2};
  const MoeRouting routing;
  const double h = 5120, f_e = 8192, f_s = 8192, tokens = 1024, received = tokens * 1 * 2;
  EXPECT_EQ(MoeInputActivationBytes(model, fp8, dims), tokens * h * (2 + 1));
  // fc1 input and fc2 input at 1 byte: h + (8 - 2 + 1) f_e / etp, and the fp32 probability.
  EXPECT_EQ(RoutedExpertActivationBytes(model, fp8, dims, expert, routing),
            received * (h + 7 * f_e / 2 + 4));
  // Of the 4 T tokens gathered over tp 4, f_s / 4 wide each.
  EXPECT_EQ(SharedExpertActivationBytes(model, fp8, dims), 4 * tokens * 7 * f_s / 4);
  EXPECT_EQ(SharedExpertActivationBytes(model, Training(8192), dims), 4 * tokens * 8 * f_s / 4);

  const int64_t layers = 12;
  const double expert_params = layers * (16.0 / 4) * 3 * f_e * h / 2;
  const double shared_params = layers * 3 * f_s * h / 4;
  EXPECT_EQ(MoeFp8WeightCopyBytes(model, fp8, dims, expert, layers),
            2 * (expert_params + shared_params));
  // fc1 and fc2 of 4 local experts and of the shared expert, 5 tensors each.
  EXPECT_EQ(MoeFp8ScalingStateBytes(model, fp8, expert, 1024, layers),
            layers * (2 * 4 + 2) * 5 * 4 * (2 + 1024.0));

  const TrainingSpec fp8_weights = Training(8192, /*fp8=*/true, /*fp8_param_gather=*/true);
  EXPECT_EQ(ExpertModelStates(model, fp8_weights, dims, expert, layers).weights, expert_params);
  EXPECT_EQ(SharedExpertModelStates(model, fp8_weights, dims, layers).weights, shared_params);
  EXPECT_EQ(MoeFp8WeightCopyBytes(model, fp8_weights, dims, expert, layers),
            expert_params + shared_params);
  // The router is a plain bf16 GEMM either way.
  EXPECT_EQ(RouterModelStates(model, fp8_weights, dims, layers).weights, 2 * layers * h * 16);
}

}  // namespace
}  // namespace paratune
