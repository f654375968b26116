#include "estimator/memory_model.h"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "estimator/moe_memory.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

double Term(const StageMemory& stage, MemoryTerm term) { return stage.term(term); }

double ModelStates(const StageMemory& stage) {
  return stage.term(MemoryTerm::kWeights) + stage.term(MemoryTerm::kGradients) +
         stage.term(MemoryTerm::kOptimizerStates);
}

double AllActivations(const StageMemory& stage) {
  return stage.term(MemoryTerm::kActivations) + stage.term(MemoryTerm::kEmbeddingActivations) +
         stage.term(MemoryTerm::kOutputActivations);
}

MemoryOptions PaperOptions() { return MemoryOptions::FormulasOnly(); }

ParallelDims Dims(int64_t dp, int64_t tp, int64_t pp, int64_t cp, int64_t b) {
  return MakeParallelDims(dp, tp, pp, cp, b);
}

// A cluster of exactly `gpus` GPUs of `type`, in nodes of 8 (or one smaller node).
ClusterSpec Cluster(int64_t gpus, const char* type = "h100-80gb") {
  const int64_t per_node = gpus < 8 ? gpus : 8;
  return *ClusterSpec::Create(*FindGpuPreset(type), gpus / per_node, per_node);
}

MemoryEstimate Estimate(const ModelSpec& model, const TrainingSpec& training,
                        const ParallelDims& dims, const MemoryOptions& options = PaperOptions()) {
  const ClusterSpec cluster = Cluster(dims.dp * dims.tp * dims.pp * dims.cp);
  PlacementRules rules;
  rules.allow_tp_cp_across_nodes = true;
  absl::StatusOr<ParallelConfig> config =
      ParallelConfig::Create(model, training, cluster, rules, dims);
  EXPECT_TRUE(config.ok()) << config.status();
  return EstimateMemory(model, training, cluster, *config, options);
}

std::string ReadRunfile(const std::string& path) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const std::string full = std::string(srcdir == nullptr ? "." : srcdir) + "/paratune/" + path;
  std::ifstream in(full);
  EXPECT_TRUE(in.good()) << "cannot open " << full;
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

bool ParseBool(absl::string_view text) { return text == "true"; }

int64_t ParseInt(absl::string_view text) {
  int64_t value = 0;
  EXPECT_TRUE(absl::SimpleAtoi(text, &value)) << text;
  return value;
}

double ParseDouble(absl::string_view text) {
  double value = 0;
  EXPECT_TRUE(absl::SimpleAtod(text, &value)) << text;
  return value;
}

// The four reference values of Fujii et al.'s estimator (arXiv 2411.06465), copied from
// data/estimator/ into testdata/: Llama-3.1-8B, s 8192, distributed optimizer, fp32
// gradients, FlashAttention, untied, no CUDA context. The CSV gives no global batch; the
// paper's runs use 1024, which keeps m >= p in every row.
TEST(MemoryModelTest, ReproducesFujii2024ReferenceValues) {
  const std::string csv =
      ReadRunfile("estimator/testdata/fujii2024_estimator_reference_values.csv");
  std::vector<std::string> lines = absl::StrSplit(csv, '\n', absl::SkipWhitespace());
  ASSERT_EQ(lines.size(), 5u);
  const ModelSpec model = *FindModelPreset("llama3.1-8b");
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::vector<std::string> f = absl::StrSplit(lines[i], ',');
    ASSERT_EQ(f.size(), 14u) << lines[i];
    ASSERT_EQ(f[0], "Llama-3.1-8B");
    TrainingOptions options;
    options.global_batch_size = 1024;
    options.seq_len = ParseInt(f[1]);
    options.distributed_optimizer = ParseBool(f[8]);
    options.fp32_gradients = ParseBool(f[9]);
    options.flash_attention = ParseBool(f[10]);
    ASSERT_TRUE(ParseBool(f[11]));  // untied, as llama3.1-8b is
    const TrainingSpec training = *TrainingSpec::Create(options);
    const ParallelDims dims =
        Dims(ParseInt(f[7]), ParseInt(f[2]), ParseInt(f[4]), ParseInt(f[3]), ParseInt(f[5]));
    ASSERT_EQ(dims.dp * dims.tp * dims.pp * dims.cp, ParseInt(f[6]));
    const MemoryEstimate estimate = Estimate(model, training, dims);
    const double states_gib = ModelStates(estimate.first_stage) / kGiB;
    const double activations_gib = AllActivations(estimate.first_stage) / kGiB;
    EXPECT_NEAR(states_gib, ParseDouble(f[12]), 1e-9) << lines[i];
    EXPECT_NEAR(activations_gib, ParseDouble(f[13]), 1e-9) << lines[i];
  }
}

// Korthikanti et al. 2022 (arXiv 2205.05198) Figure 1, per-GPU memory of GPT models without
// FlashAttention, copied from data/estimator/ into testdata/. The GPTs are MHA with a 4h
// non-gated MLP, tied embeddings and a 51,200-token vocabulary; "seqsel" rows use sequence
// parallelism and selective recompute, "none" rows TP alone and no recompute. The figure is
// formula-based: activations are Korthikanti's Table 2 per-layer term times the layers and
// micro-batches in flight on the first stage, interleaved with the v of the Calculon configs
// the figure was taken from (3 for the 175B and 530B models, 1 otherwise, not in the CSV);
// parameters + optimizer states are 18 bytes x 12 L h^2 / (t p): no distributed optimizer,
// fp32 gradients, the layers only.
TEST(MemoryModelTest, ReproducesKorthikanti2022Figure1) {
  const std::string csv = ReadRunfile("estimator/testdata/korthikanti2022_fig1_memory.csv");
  std::vector<std::string> lines = absl::StrSplit(csv, '\n', absl::SkipWhitespace());
  ASSERT_EQ(lines.size(), 9u);
  ASSERT_TRUE(absl::StartsWith(lines[0],
                               "model,mode,hidden,heads,layers,seq_len,tp,pp,num_gpus,"
                               "global_batch,micro_batch,params_plus_optimizer_GiB,"));
  for (size_t i = 1; i < lines.size(); ++i) {
    // The leading numeric columns hold no quoted commas; the free-text tail is not parsed.
    const std::vector<std::string> f = absl::StrSplit(lines[i], absl::MaxSplits(',', 15));
    ASSERT_EQ(f.size(), 16u) << lines[i];
    const int64_t hidden = ParseInt(f[2]);
    const int64_t heads = ParseInt(f[3]);
    const int64_t layers = ParseInt(f[4]);
    const ModelSpec model =
        *ModelSpec::Create(f[0], {hidden, 4 * hidden, layers, heads, heads, 51200,
                                  /*tied_embeddings=*/true, /*gated_mlp=*/false});
    TrainingOptions options;
    options.global_batch_size = ParseInt(f[9]);
    options.seq_len = ParseInt(f[5]);
    options.flash_attention = false;
    options.distributed_optimizer = false;
    const TrainingSpec training = *TrainingSpec::Create(options);
    const int64_t tp = ParseInt(f[6]);
    const int64_t pp = ParseInt(f[7]);
    ParallelDims dims = Dims(ParseInt(f[8]) / (tp * pp), tp, pp, 1, ParseInt(f[10]));
    dims.virtual_pipeline = f[0] == "gpt3-175B" || f[0] == "turing-530B" ? 3 : 1;
    ASSERT_TRUE(f[1] == "seqsel" || f[1] == "none") << f[1];
    dims.sequence_parallel = f[1] == "seqsel";
    dims.recompute = f[1] == "seqsel" ? Recompute::kSelective : Recompute::kNone;
    const MemoryEstimate estimate = Estimate(model, training, dims);

    EXPECT_NEAR(Term(estimate.first_stage, MemoryTerm::kActivations) / kGiB, ParseDouble(f[13]),
                1e-9)
        << lines[i];
    // A middle stage holds layers only; its extra 2h norm weights per layer are 1/(6h) of 12h^2.
    if (pp > 2) {
      EXPECT_NEAR(ModelStates(estimate.middle_stage) / kGiB / ParseDouble(f[11]), 1, 1e-4)
          << lines[i];
    }
  }
}

class LlamaMemoryTest : public ::testing::Test {
 protected:
  LlamaMemoryTest()
      : model_(*FindModelPreset("llama3.1-8b")), training_(*TrainingSpec::Create({1024, 8192})) {}

  // Parameters per GPU implied by the weights term (2 bytes each).
  static double Params(const StageMemory& stage) { return Term(stage, MemoryTerm::kWeights) / 2; }

  // training_ under TorchTitan.
  TrainingSpec TorchTitan() const {
    TrainingOptions options = training_.options();
    options.framework = Framework::kTorchTitan;
    return *TrainingSpec::Create(options);
  }

  ModelSpec model_;
  TrainingSpec training_;
};

TEST_F(LlamaMemoryTest, BytesPerParameter) {
  const MemoryEstimate on = Estimate(model_, training_, Dims(8, 2, 1, 1, 1));
  const double p = Params(on.first_stage);
  EXPECT_EQ(Term(on.first_stage, MemoryTerm::kGradients), 4 * p);
  EXPECT_DOUBLE_EQ(Term(on.first_stage, MemoryTerm::kOptimizerStates), 12 * p / 8);

  ParallelDims unsharded = Dims(8, 2, 1, 1, 1);
  unsharded.dp_sharding = DataParallelSharding::kNone;
  const MemoryEstimate off = Estimate(model_, training_, unsharded);
  EXPECT_EQ(Term(off.first_stage, MemoryTerm::kOptimizerStates), 12 * p);
  EXPECT_EQ(ModelStates(off.first_stage), 18 * p);

  TrainingOptions options = training_.options();
  options.fp32_gradients = false;
  const MemoryEstimate bf16 = Estimate(model_, *TrainingSpec::Create(options), Dims(8, 2, 1, 1, 1));
  EXPECT_EQ(Term(bf16.first_stage, MemoryTerm::kGradients), 2 * p);

  // The distributed optimizer shards over d x c.
  const MemoryEstimate cp = Estimate(model_, training_, Dims(4, 2, 1, 2, 1));
  EXPECT_DOUBLE_EQ(Term(cp.first_stage, MemoryTerm::kOptimizerStates),
                   12 * Params(cp.first_stage) / 8);
}

TEST_F(LlamaMemoryTest, EachShardingModeShardsOneMoreState) {
  // Megatron-LM: 2 + 4 + 12 bytes per parameter; ZeRO-1 shards the 12, ZeRO-2 the 4 too,
  // full sharding the 2 as well and holds two gathered units (a unit here: the embedding
  // table, Llama 3.1 8B's largest, h V / t parameters).
  ParallelDims dims = Dims(8, 2, 1, 1, 1);
  const double p = Params(Estimate(model_, training_, dims).first_stage);
  const double s = 8;
  dims.dp_sharding = DataParallelSharding::kGradients;
  const MemoryEstimate gradients = Estimate(model_, training_, dims);
  EXPECT_EQ(Term(gradients.first_stage, MemoryTerm::kWeights), 2 * p);
  EXPECT_DOUBLE_EQ(Term(gradients.first_stage, MemoryTerm::kGradients), 4 * p / s);
  EXPECT_DOUBLE_EQ(Term(gradients.first_stage, MemoryTerm::kOptimizerStates), 12 * p / s);
  EXPECT_EQ(Term(gradients.first_stage, MemoryTerm::kGatheredWeights), 0);
  dims.dp_sharding = DataParallelSharding::kFull;
  const MemoryEstimate full = Estimate(model_, training_, dims);
  EXPECT_DOUBLE_EQ(ModelStates(full.first_stage), 18 * p / s);
  const double unit = static_cast<double>(model_.hidden_size() * model_.vocab_size()) / 2;
  EXPECT_DOUBLE_EQ(Term(full.first_stage, MemoryTerm::kGatheredWeights), 4 * unit);

  // Hybrid sharding: groups of 2 of the 8 data-parallel ranks.
  dims.dp_shard_group = 2;
  const MemoryEstimate hybrid = Estimate(model_, training_, dims);
  EXPECT_DOUBLE_EQ(ModelStates(hybrid.first_stage), 18 * p / 2);
}

TEST_F(LlamaMemoryTest, TorchTitanKeepsFp32ParametersAndTwoMoments) {
  // FSDP2's fp32 parameters, fp32 gradients and AdamW's two moments: 16 bytes per
  // parameter, all sharded; without resharding after forward every unit's bf16 weights stay
  // gathered.
  const TrainingSpec titan = TorchTitan();
  ParallelDims dims = Dims(8, 1, 1, 1, 1);
  const double p = Params(Estimate(model_, training_, dims).first_stage);
  dims.dp_sharding = DataParallelSharding::kFull;
  EXPECT_DOUBLE_EQ(ModelStates(Estimate(model_, titan, dims).first_stage), 16 * p / 8);
  dims.dp_sharding = DataParallelSharding::kGradients;
  const MemoryEstimate gradients = Estimate(model_, titan, dims);
  EXPECT_DOUBLE_EQ(ModelStates(gradients.first_stage), 16 * p / 8);
  EXPECT_DOUBLE_EQ(Term(gradients.first_stage, MemoryTerm::kGatheredWeights), 2 * p);
  dims.dp_sharding = DataParallelSharding::kNone;
  EXPECT_DOUBLE_EQ(ModelStates(Estimate(model_, titan, dims).first_stage), 16 * p);
}

TEST_F(LlamaMemoryTest, TorchTitanLayersSaveGatheredInputsAndExpandedKeysAndValues) {
  // Llama 3.1 8B (h 4096, 32 heads of 128, 8 kv heads) at s b = 8192 x 1 on tp 4 without
  // recompute: TorchTitan's layers hold, beyond Megatron-LM's, the two gathered linear inputs
  // less their sequence-parallel share and the keys and values widened to every head.
  const TrainingSpec titan = TorchTitan();
  ParallelDims dims = Dims(2, 4, 1, 1, 1);
  dims.dp_sharding = DataParallelSharding::kFull;
  const double megatron =
      Term(Estimate(model_, training_, dims).first_stage, MemoryTerm::kActivations);
  const double torchtitan =
      Term(Estimate(model_, titan, dims).first_stage, MemoryTerm::kActivations);
  const double tokens = static_cast<double>(training_.seq_len());
  const double per_layer = 2 * 2 * tokens * 4096 * 3 / 4 + 2 * 2 * tokens / 4 * (4096 - 1024);
  EXPECT_DOUBLE_EQ(torchtitan - megatron, 32 * per_layer);
}

TEST_F(LlamaMemoryTest, SingleStageParameters) {
  const MemoryEstimate estimate = Estimate(model_, training_, Dims(8, 1, 1, 1, 1));
  EXPECT_EQ(Params(estimate.first_stage), model_.ParameterCount());
  EXPECT_EQ(estimate.first_stage.stage, 0);
  EXPECT_EQ(estimate.last_stage.stage, 0);
  EXPECT_EQ(estimate.last_stage.Total(), estimate.first_stage.Total());
  EXPECT_FALSE(estimate.peak_is_last_stage);
  const MemoryEstimate tp4 = Estimate(model_, training_, Dims(2, 4, 1, 1, 1));
  // All TP-sharded but the final norm, which every TP rank keeps whole.
  EXPECT_DOUBLE_EQ(Params(tp4.first_stage), (model_.ParameterCount() - 4096) / 4 + 4096);
}

TEST_F(LlamaMemoryTest, TiedAndUntiedEmbeddings) {
  ModelDimensions dims = model_.dims();
  dims.tied_embeddings = true;
  const ModelSpec tied = *ModelSpec::Create("tied", dims);
  const double hv = 4096.0 * 128256;
  // p = 1: the tied model has no separate LM head.
  EXPECT_DOUBLE_EQ(Params(Estimate(model_, training_, Dims(8, 2, 1, 1, 1)).first_stage) -
                       Params(Estimate(tied, training_, Dims(8, 2, 1, 1, 1)).first_stage),
                   hv / 2);
  // p > 1: the first stages are equal, and the last stage keeps a copy for the LM head.
  const MemoryEstimate untied_pp = Estimate(model_, training_, Dims(4, 2, 2, 1, 1));
  const MemoryEstimate tied_pp = Estimate(tied, training_, Dims(4, 2, 2, 1, 1));
  EXPECT_EQ(Params(untied_pp.first_stage), Params(tied_pp.first_stage));
  EXPECT_EQ(Params(untied_pp.last_stage), Params(tied_pp.last_stage));
  // 16 layers and the LM head over t = 2, and the replicated final norm.
  EXPECT_DOUBLE_EQ(Params(untied_pp.last_stage),
                   (16 * (2 * 4096.0 * 4096 * (1 + 0.25 + 1.5 * 3.5) + 2 * 4096) + hv) / 2 + 4096);
}

TEST_F(LlamaMemoryTest, FirstAndLastStage) {
  const MemoryEstimate estimate = Estimate(model_, training_, Dims(4, 2, 2, 1, 1));
  EXPECT_EQ(estimate.first_stage.stage, 0);
  EXPECT_EQ(estimate.last_stage.stage, 1);
  const double sbh = 8192.0 * 4096;
  const double layer = sbh * (12 + 4 * 0.25 + 8 * 3.5) / 2;
  // First: p = 2 micro-batches of 16 layers, and the embedding of both; no LM head.
  EXPECT_DOUBLE_EQ(Term(estimate.first_stage, MemoryTerm::kActivations), 32 * layer);
  EXPECT_DOUBLE_EQ(Term(estimate.first_stage, MemoryTerm::kEmbeddingActivations), 8 * sbh * 2 / 2);
  EXPECT_EQ(Term(estimate.first_stage, MemoryTerm::kOutputActivations), 0);
  // Last: one micro-batch of 16 layers, and the LM head's input and fp32 logits.
  EXPECT_DOUBLE_EQ(Term(estimate.last_stage, MemoryTerm::kActivations), 16 * layer);
  EXPECT_EQ(Term(estimate.last_stage, MemoryTerm::kEmbeddingActivations), 0);
  EXPECT_DOUBLE_EQ(Term(estimate.last_stage, MemoryTerm::kOutputActivations),
                   4 * sbh * (1 + 128256.0 / 4096) / 2);
  EXPECT_DOUBLE_EQ(estimate.peak_bytes,
                   std::max(estimate.first_stage.Total(), estimate.last_stage.Total()));
  EXPECT_EQ(estimate.peak_is_last_stage,
            estimate.last_stage.Total() > estimate.first_stage.Total());
}

TEST_F(LlamaMemoryTest, LastStageCanBeThePeak) {
  // Llama-3.2-1B: small layers, large vocabulary. With one micro-batch per step the first
  // stage holds one micro-batch, and the fp32 logits dominate the last.
  const ModelSpec model = *FindModelPreset("llama3.2-1b");
  const TrainingSpec training = *TrainingSpec::Create({2, 8192});
  const MemoryEstimate estimate = Estimate(model, training, Dims(2, 1, 2, 1, 1));
  EXPECT_TRUE(estimate.peak_is_last_stage);
  EXPECT_EQ(estimate.peak_bytes, estimate.last_stage.Total());
  EXPECT_GT(estimate.last_stage.Total(), estimate.first_stage.Total());
}

TEST_F(LlamaMemoryTest, FewerMicroBatchesThanStages) {
  // m = 2 < p = 4: the first stage holds 2 micro-batches, half of what m >= p holds.
  const TrainingSpec small = *TrainingSpec::Create({4, 8192});
  const TrainingSpec large = *TrainingSpec::Create({1024, 8192});
  const MemoryEstimate few = Estimate(model_, small, Dims(2, 2, 4, 1, 1));
  const MemoryEstimate many = Estimate(model_, large, Dims(2, 2, 4, 1, 1));
  EXPECT_DOUBLE_EQ(Term(few.first_stage, MemoryTerm::kActivations) * 2,
                   Term(many.first_stage, MemoryTerm::kActivations));
  EXPECT_DOUBLE_EQ(Term(few.first_stage, MemoryTerm::kEmbeddingActivations) * 2,
                   Term(many.first_stage, MemoryTerm::kEmbeddingActivations));
  EXPECT_EQ(Term(few.last_stage, MemoryTerm::kActivations),
            Term(many.last_stage, MemoryTerm::kActivations));
}

TEST_F(LlamaMemoryTest, InterleavedPipelineHoldsMore) {
  ParallelDims dims = Dims(4, 2, 2, 1, 1);
  const MemoryEstimate plain = Estimate(model_, training_, dims);
  dims.virtual_pipeline = 4;
  const MemoryEstimate interleaved = Estimate(model_, training_, dims);
  // 1 + (p-1)/(pv) = 1 + 1/8.
  EXPECT_DOUBLE_EQ(Term(interleaved.first_stage, MemoryTerm::kActivations),
                   Term(plain.first_stage, MemoryTerm::kActivations) * 1.125);
  // The last rank warms up (v-1)p = 6 chunks of 4 layers, plus one: 28 layer-micro-batches.
  EXPECT_DOUBLE_EQ(Term(interleaved.last_stage, MemoryTerm::kActivations),
                   Term(plain.last_stage, MemoryTerm::kActivations) * 28 / 16);
  EXPECT_EQ(ModelStates(interleaved.first_stage), ModelStates(plain.first_stage));
}

TEST_F(LlamaMemoryTest, RecomputeModes) {
  ParallelDims dims = Dims(8, 2, 1, 1, 1);
  const MemoryEstimate none = Estimate(model_, training_, dims);
  dims.recompute = Recompute::kSelective;
  const MemoryEstimate selective = Estimate(model_, training_, dims);
  dims.recompute = Recompute::kFull;
  const MemoryEstimate full = Estimate(model_, training_, dims);
  // With FlashAttention, selective recompute frees nothing.
  EXPECT_EQ(selective.first_stage.Total(), none.first_stage.Total());
  // Full: 32 layer inputs of 2sbh/t plus one layer's working set.
  const double sbh = 8192.0 * 4096;
  const double layer = Term(none.first_stage, MemoryTerm::kActivations) / 32;
  EXPECT_DOUBLE_EQ(Term(full.first_stage, MemoryTerm::kActivations), 32 * 2 * sbh / 2 + layer);
  EXPECT_EQ(ModelStates(full.first_stage), ModelStates(none.first_stage));
  EXPECT_EQ(Term(full.first_stage, MemoryTerm::kOutputActivations),
            Term(none.first_stage, MemoryTerm::kOutputActivations));
}

TEST_F(LlamaMemoryTest, FullRecomputeWithoutSequenceParallelismOrFlashAttention) {
  ParallelDims dims = Dims(4, 4, 1, 1, 1);
  dims.sequence_parallel = false;
  dims.recompute = Recompute::kFull;
  const double sbh = 8192.0 * 4096;
  // Layer inputs stay whole on every TP rank without SP: 2sbh per layer.
  const MemoryEstimate flash = Estimate(model_, training_, dims);
  const double flash_layer = sbh * (8 + (4 + 1 + 28) / 4.0);
  EXPECT_DOUBLE_EQ(Term(flash.first_stage, MemoryTerm::kActivations), 32 * 2 * sbh + flash_layer);
  // Without FlashAttention the recomputed layer's working set includes its attention scores.
  TrainingOptions options = training_.options();
  options.flash_attention = false;
  const MemoryEstimate unfused = Estimate(model_, *TrainingSpec::Create(options), dims);
  const double unfused_layer = sbh * (10 + 24.0 / 4 + 5 * 32 * 8192.0 / (4096 * 4));
  EXPECT_DOUBLE_EQ(Term(unfused.first_stage, MemoryTerm::kActivations),
                   32 * 2 * sbh + unfused_layer);
}

TEST_F(LlamaMemoryTest, InterleavedWithFewerMicroBatchesThanChunks) {
  // m = 2, p = 2, v = 4: the interleaved warm-up of stage 0 (2(p-1) + (v-1)p + 1 = 9 chunks)
  // is cut to the m v = 8 chunks of the step, all 16 layers of both micro-batches; the last
  // stage's ((v-1)p + 1 = 7 chunks of 4 layers) is not.
  ParallelDims dims = Dims(4, 2, 2, 1, 1);
  dims.virtual_pipeline = 4;
  const MemoryEstimate few = Estimate(model_, *TrainingSpec::Create({8, 8192}), dims);
  const double layer = 8192.0 * 4096 * (12 + 4 * 0.25 + 8 * 3.5) / 2;
  EXPECT_DOUBLE_EQ(Term(few.first_stage, MemoryTerm::kActivations), 2 * 16 * layer);
  EXPECT_DOUBLE_EQ(Term(few.last_stage, MemoryTerm::kActivations), 7 * 4 * layer);
}

TEST_F(LlamaMemoryTest, NonGatedMlpKeepsTwoFfnWideTensors) {
  ModelDimensions dims = model_.dims();
  dims.gated_mlp = false;
  const ModelSpec gpt_like = *ModelSpec::Create("non-gated", dims);
  const double sbh = 8192.0 * 4096;
  EXPECT_DOUBLE_EQ(Term(Estimate(gpt_like, training_, Dims(8, 2, 1, 1, 1)).first_stage,
                        MemoryTerm::kActivations),
                   32 * sbh * (12 + 4 * 0.25 + 4 * 3.5) / 2);
  // Two f x h matrices per MLP instead of three.
  EXPECT_DOUBLE_EQ(gpt_like.LayerParameterCount(), model_.LayerParameterCount() - 4096.0 * 14336);
}

TEST_F(LlamaMemoryTest, GradientBucketsFollowTheGradientType) {
  MemoryOptions options = PaperOptions();
  options.bucket_parameters = 40e6;
  TrainingOptions bf16 = training_.options();
  bf16.fp32_gradients = false;
  EXPECT_DOUBLE_EQ(
      Term(Estimate(model_, *TrainingSpec::Create(bf16), Dims(8, 2, 1, 1, 1), options).first_stage,
           MemoryTerm::kGradientBuckets),
      40e6 * 2);
  // Nothing to reduce with a single data-parallel and context-parallel rank.
  EXPECT_EQ(Term(Estimate(model_, training_, Dims(1, 8, 2, 1, 1), options).first_stage,
                 MemoryTerm::kGradientBuckets),
            0);
}

TEST_F(LlamaMemoryTest, WithoutSequenceParallelism) {
  ParallelDims dims = Dims(4, 4, 1, 1, 1);
  const MemoryEstimate sp = Estimate(model_, training_, dims);
  dims.sequence_parallel = false;
  const MemoryEstimate no_sp = Estimate(model_, training_, dims);
  const double sbh = 8192.0 * 4096;
  // Norm and linear inputs (8sbh) stay whole on every TP rank.
  EXPECT_DOUBLE_EQ(Term(no_sp.first_stage, MemoryTerm::kActivations),
                   32 * sbh * (8 + (4 + 1 + 28) / 4.0));
  EXPECT_DOUBLE_EQ(Term(sp.first_stage, MemoryTerm::kActivations), 32 * sbh * 41 / 4);
  EXPECT_DOUBLE_EQ(Term(no_sp.first_stage, MemoryTerm::kEmbeddingActivations), 8 * sbh);
  EXPECT_DOUBLE_EQ(Term(no_sp.first_stage, MemoryTerm::kOutputActivations),
                   4 * sbh + 4 * 8192.0 * 128256 / 4);
  // Without TP the switch changes nothing.
  ParallelDims tp1 = Dims(16, 1, 1, 1, 1);
  const MemoryEstimate tp1_sp = Estimate(model_, training_, tp1);
  tp1.sequence_parallel = false;
  EXPECT_EQ(Estimate(model_, training_, tp1).first_stage.Total(), tp1_sp.first_stage.Total());
}

TEST_F(LlamaMemoryTest, WithoutFlashAttentionSelectiveRecomputeDropsScores) {
  TrainingOptions options = training_.options();
  options.flash_attention = false;
  const TrainingSpec training = *TrainingSpec::Create(options);
  ParallelDims dims = Dims(4, 4, 1, 1, 1);
  const double sbh = 8192.0 * 4096;
  const double scores = 5 * 32 * 8192.0 / (4096 * 4);
  EXPECT_DOUBLE_EQ(Term(Estimate(model_, training, dims).first_stage, MemoryTerm::kActivations),
                   32 * sbh * (34.0 / 4 + scores));
  dims.recompute = Recompute::kSelective;
  EXPECT_DOUBLE_EQ(Term(Estimate(model_, training, dims).first_stage, MemoryTerm::kActivations),
                   32 * sbh * 34.0 / 4);
  dims.recompute = Recompute::kNone;
  dims.sequence_parallel = false;
  EXPECT_DOUBLE_EQ(Term(Estimate(model_, training, dims).first_stage, MemoryTerm::kActivations),
                   32 * sbh * (10 + 24.0 / 4 + scores));
}

TEST_F(LlamaMemoryTest, CudaContextOnEveryStage) {
  MemoryOptions options = PaperOptions();
  options.cuda_context_bytes = 512.0 * 1024 * 1024;
  const MemoryEstimate with = Estimate(model_, training_, Dims(4, 2, 2, 1, 1), options);
  const MemoryEstimate without = Estimate(model_, training_, Dims(4, 2, 2, 1, 1));
  EXPECT_EQ(Term(with.first_stage, MemoryTerm::kCudaContext), options.cuda_context_bytes);
  EXPECT_EQ(Term(with.last_stage, MemoryTerm::kCudaContext), options.cuda_context_bytes);
  EXPECT_DOUBLE_EQ(with.peak_bytes, without.peak_bytes + options.cuda_context_bytes);
  EXPECT_EQ(MemoryOptions().cuda_context_bytes, 512.0 * 1024 * 1024);
}

TEST_F(LlamaMemoryTest, VerdictThresholds) {
  const ParallelDims dims = Dims(8, 2, 1, 1, 1);
  const ClusterSpec cluster = Cluster(16);
  const ParallelConfig config = *ParallelConfig::Create(model_, training_, cluster, {}, dims);
  MemoryOptions options = PaperOptions();
  const MemoryEstimate base = EstimateMemory(model_, training_, cluster, config, options);
  EXPECT_DOUBLE_EQ(base.capacity_bytes, 81559.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(base.fraction_of_capacity, base.peak_bytes / base.capacity_bytes);
  const double fraction = base.fraction_of_capacity;
  ASSERT_LT(fraction, 1.0);

  options.safe_fraction = std::nextafter(fraction, 2.0);
  EXPECT_EQ(EstimateMemory(model_, training_, cluster, config, options).verdict,
            MemoryVerdict::kSafe);
  options.safe_fraction = fraction;  // at the threshold: no longer SAFE
  EXPECT_EQ(EstimateMemory(model_, training_, cluster, config, options).verdict,
            MemoryVerdict::kRisky);

  GpuSpec gpu = cluster.gpu();
  options.safe_fraction = 0.8;
  gpu.memory_bytes = static_cast<int64_t>(std::ceil(base.peak_bytes));  // fraction <= 1
  ClusterSpec exact = *ClusterSpec::Create(gpu, 2, 8);
  MemoryEstimate estimate = EstimateMemory(model_, training_, exact, config, options);
  EXPECT_LE(estimate.fraction_of_capacity, 1.0);
  EXPECT_EQ(estimate.verdict, MemoryVerdict::kRisky);
  gpu.memory_bytes = static_cast<int64_t>(std::floor(base.peak_bytes)) - 1;
  estimate = EstimateMemory(model_, training_, *ClusterSpec::Create(gpu, 2, 8), config, options);
  EXPECT_GT(estimate.fraction_of_capacity, 1.0);
  EXPECT_EQ(estimate.verdict, MemoryVerdict::kOutOfMemory);
}

TEST_F(LlamaMemoryTest, OverheadTermsFollowTheirOptions) {
  // dp 2, tp 2, pp 4, cp 2 on 32 GPUs: stage 0 is in the tp, cp, dp, dp-cp, pp and embedding
  // communicators; a middle stage in all but the embedding one.
  const ParallelDims dims = Dims(2, 2, 4, 2, 1);
  MemoryOptions options = PaperOptions();
  options.nccl_buffer_bytes = 4.0 * 1024 * 1024;
  options.nccl_channels = 8;
  options.bucket_parameters = 40e6;
  options.pipeline_buffers = true;
  options.fragmentation_factor = 1.1;
  const MemoryEstimate estimate = Estimate(model_, training_, dims, options);
  const double per_communicator = 4.0 * 1024 * 1024 * 8 * 2;
  EXPECT_DOUBLE_EQ(Term(estimate.first_stage, MemoryTerm::kNcclBuffers), 6 * per_communicator);
  EXPECT_DOUBLE_EQ(Term(estimate.middle_stage, MemoryTerm::kNcclBuffers), 5 * per_communicator);
  EXPECT_DOUBLE_EQ(Term(estimate.last_stage, MemoryTerm::kNcclBuffers), 6 * per_communicator);
  EXPECT_DOUBLE_EQ(Term(estimate.first_stage, MemoryTerm::kGradientBuckets), 40e6 * 4);
  // 4 tensors of sbh/(tc) bf16 values.
  EXPECT_DOUBLE_EQ(Term(estimate.first_stage, MemoryTerm::kPipelineBuffers),
                   4 * 2 * 8192.0 * 4096 / 4);
  EXPECT_NEAR(Term(estimate.first_stage, MemoryTerm::kFragmentation),
              0.1 * AllActivations(estimate.first_stage), 1);
  const MemoryEstimate bare = Estimate(model_, training_, dims);
  for (int t = static_cast<int>(MemoryTerm::kNcclBuffers); t < static_cast<int>(MemoryTerm::kCount);
       ++t) {
    EXPECT_EQ(bare.first_stage.bytes[t], 0) << MemoryTermName(static_cast<MemoryTerm>(t));
  }
}

TEST_F(LlamaMemoryTest, MiddleStageCanBeThePeakOfAnUnevenSplit) {
  // Llama-3.1-405B-like depth on pp 8 with the uneven split: stage 1 holds 16 layers and 7
  // micro-batches, stage 0 15 layers and 8; both are bounded by the reported peak.
  ModelDimensions deep = model_.dims();
  deep.num_layers = 126;
  const ModelSpec model = *ModelSpec::Create("deep-8b", deep);
  const ParallelDims dims = Dims(1, 1, 8, 1, 1);
  const ClusterSpec cluster = Cluster(8);
  PlacementRules rules;
  rules.allow_uneven_pipeline = true;
  const ParallelConfig config = *ParallelConfig::Create(model, training_, cluster, rules, dims);
  EXPECT_EQ(ParallelConfig::Create(model, training_, cluster, {}, dims).status().code(),
            absl::StatusCode::kInvalidArgument);
  const MemoryEstimate estimate = EstimateMemory(model, training_, cluster, config, PaperOptions());
  EXPECT_EQ(estimate.middle_stage.stage, 1);
  const double layer = Term(estimate.middle_stage, MemoryTerm::kActivations) / (16 * 7);
  EXPECT_NEAR(Term(estimate.first_stage, MemoryTerm::kActivations), layer * 15 * 8, 1);
  EXPECT_GE(estimate.peak_bytes, estimate.first_stage.Total());
  EXPECT_GE(estimate.peak_bytes, estimate.middle_stage.Total());
  EXPECT_GE(estimate.peak_bytes, estimate.last_stage.Total());
}

TrainingSpec Fp8(const TrainingSpec& training) {
  TrainingOptions options = training.options();
  options.fp8 = true;
  return *TrainingSpec::Create(options);
}

TEST_F(LlamaMemoryTest, Fp8TermsByHand) {
  // Llama-3.1-8B on dp 8: h 4096, f 14336, 8 of 32 heads for K and V. Linear weights per
  // layer 2h^2 (1 + 8/32) + 3fh = 41,943,040 + 176,160,768 = 218,103,808.
  const ParallelDims dims = Dims(8, 1, 1, 1, 1);
  const MemoryEstimate bf16 = Estimate(model_, training_, dims);
  const MemoryEstimate fp8 = Estimate(model_, Fp8(training_), dims);
  const StageMemory& stage = fp8.first_stage;
  // fp8 weight and fp8 transpose, 1 byte each, for 32 layers.
  EXPECT_DOUBLE_EQ(Term(stage, MemoryTerm::kFp8WeightCopies), 2 * 32 * 218103808.0);
  // 32 layers x 4 linears x 5 tensors x fp32 (scale, scale_inv, 1024 history entries).
  EXPECT_DOUBLE_EQ(Term(stage, MemoryTerm::kFp8ScalingState), 32 * 4 * 5 * 4 * 1026.0);
  // One micro-batch in flight per layer: sbh (12 + 4k/a + 8f/h) = 41 sbh in bf16; fp8 halves
  // the inputs of QKV and the first MLP linear (2 + 2), of the projection (2) and of the
  // down projection (2f/h = 7): 41 - 6.5 = 34.5 sbh.
  const double sbh = 8192.0 * 1 * 4096;
  EXPECT_DOUBLE_EQ(Term(bf16.first_stage, MemoryTerm::kActivations), 32 * 41 * sbh);
  EXPECT_DOUBLE_EQ(Term(stage, MemoryTerm::kActivations), 32 * 34.5 * sbh);
  // The rest is the bf16 estimate's.
  for (MemoryTerm t : {MemoryTerm::kWeights, MemoryTerm::kGradients, MemoryTerm::kOptimizerStates,
                       MemoryTerm::kEmbeddingActivations, MemoryTerm::kOutputActivations}) {
    EXPECT_EQ(Term(stage, t), Term(bf16.first_stage, t)) << MemoryTermName(t);
  }
}

TEST_F(LlamaMemoryTest, Fp8SavedInputsFollowTensorParallelSharding) {
  // tp 2 without SP: the QKV and first MLP inputs stay whole (2 x 1 byte saved), the
  // projection and down projection inputs are sharded ((1 + f/h) / 2 = 2.25 saved).
  ParallelDims dims = Dims(4, 2, 1, 1, 1);
  dims.sequence_parallel = false;
  const double sbh = 8192.0 * 4096;
  const double bf16 = Term(Estimate(model_, training_, dims).first_stage, MemoryTerm::kActivations);
  const double fp8 =
      Term(Estimate(model_, Fp8(training_), dims).first_stage, MemoryTerm::kActivations);
  EXPECT_DOUBLE_EQ(bf16 - fp8, 32 * (2 + 2.25) * sbh);
  // With SP all four are sharded: (2 + 1 + 3.5) / 2.
  dims.sequence_parallel = true;
  const double bf16_sp =
      Term(Estimate(model_, training_, dims).first_stage, MemoryTerm::kActivations);
  const double fp8_sp =
      Term(Estimate(model_, Fp8(training_), dims).first_stage, MemoryTerm::kActivations);
  EXPECT_DOUBLE_EQ(bf16_sp - fp8_sp, 32 * 3.25 * sbh);
  // Weight copies are TP-sharded too.
  EXPECT_DOUBLE_EQ(
      Term(Estimate(model_, Fp8(training_), dims).first_stage, MemoryTerm::kFp8WeightCopies),
      32 * 218103808.0);
}

TEST_F(LlamaMemoryTest, Fp8ParamGatherKeepsWeightsInFp8) {
  TrainingOptions options = Fp8(training_).options();
  options.fp8_param_gather = true;
  const ParallelDims dims = Dims(8, 1, 1, 1, 1);
  const StageMemory cached = Estimate(model_, Fp8(training_), dims).first_stage;
  const StageMemory gathered = Estimate(model_, *TrainingSpec::Create(options), dims).first_stage;
  // Only the transpose is extra, and the 32 layers' linear weights take 1 byte, not 2.
  EXPECT_DOUBLE_EQ(Term(gathered, MemoryTerm::kFp8WeightCopies), 32 * 218103808.0);
  EXPECT_DOUBLE_EQ(Term(cached, MemoryTerm::kWeights) - Term(gathered, MemoryTerm::kWeights),
                   32 * 218103808.0);
  EXPECT_DOUBLE_EQ(cached.Total() - gathered.Total(), 2 * 32 * 218103808.0);
}

TEST_F(LlamaMemoryTest, Fp8ScalingStateFollowsHistoryLength) {
  MemoryOptions options = PaperOptions();
  options.fp8_amax_history_len = 1;
  const MemoryEstimate estimate = Estimate(model_, Fp8(training_), Dims(8, 1, 1, 1, 1), options);
  EXPECT_DOUBLE_EQ(Term(estimate.first_stage, MemoryTerm::kFp8ScalingState), 32 * 4 * 5 * 4 * 3.0);
}

TEST_F(LlamaMemoryTest, Bf16HasNoFp8Terms) {
  const MemoryEstimate estimate = Estimate(model_, training_, Dims(2, 2, 2, 1, 1));
  for (const StageMemory* stage : {&estimate.first_stage, &estimate.last_stage}) {
    EXPECT_EQ(Term(*stage, MemoryTerm::kFp8WeightCopies), 0);
    EXPECT_EQ(Term(*stage, MemoryTerm::kFp8ScalingState), 0);
  }
}

// Mixtral 8x7B (32 MoE layers of 8 experts, top-2), s 4096, on 8 H100s: the MoE terms of
// moe_memory.h in place of the dense MLP's.
class MixtureOfExpertsMemoryTest : public ::testing::Test {
 protected:
  MixtureOfExpertsMemoryTest()
      : model_(*FindModelPreset("mixtral-8x7b")), training_(*TrainingSpec::Create({64, 4096})) {}

  static ParallelDims ExpertDims(int64_t ep) {
    ParallelDims dims = Dims(8, 1, 1, 1, 1);
    dims.ep = ep;
    return dims;
  }

  // The same layers with a dense MLP of the experts' width.
  ModelSpec DenseTwin() const {
    ModelDimensions dims = model_.dims();
    dims.moe = MoeDimensions();
    return *ModelSpec::Create("dense twin", dims);
  }

  ModelSpec model_;
  TrainingSpec training_;
};

TEST_F(MixtureOfExpertsMemoryTest, ExpertStatesAreShardedOverExpertParallelism) {
  const MemoryEstimate ep8 = Estimate(model_, training_, ExpertDims(8));
  const MemoryEstimate ep4 = Estimate(model_, training_, ExpertDims(4));
  // Halving ep doubles the local experts; their bf16 weights and whole fp32 gradients grow by
  // that, their optimizer states (over edp = 8 / ep) not at all.
  const double extra = ExpertParameters(model_, {4, 1}, 32) - ExpertParameters(model_, {8, 1}, 32);
  EXPECT_DOUBLE_EQ(extra, 4 * 32 * 3.0 * 14336 * 4096 / 4 * 1);
  EXPECT_DOUBLE_EQ(
      Term(ep4.first_stage, MemoryTerm::kWeights) - Term(ep8.first_stage, MemoryTerm::kWeights),
      2 * extra);
  EXPECT_DOUBLE_EQ(
      Term(ep4.first_stage, MemoryTerm::kGradients) - Term(ep8.first_stage, MemoryTerm::kGradients),
      4 * extra);
  EXPECT_NEAR(Term(ep4.first_stage, MemoryTerm::kOptimizerStates),
              Term(ep8.first_stage, MemoryTerm::kOptimizerStates), 1);
}

TEST_F(MixtureOfExpertsMemoryTest, MoeBlocksReplaceTheMlpActivations) {
  const ParallelDims dims = ExpertDims(8);
  const MemoryEstimate moe = Estimate(model_, training_, dims);
  const MemoryEstimate dense = Estimate(DenseTwin(), training_, ExpertDims(1));
  // pp 1: the 32 layers hold one micro-batch each. The dense MLP's activations with
  // FlashAttention, 2sbh + 8sbf bytes, give way to the MoE block's.
  const double s = 4096, h = 4096, f = 14336;
  const double block = MoeBlockActivationBytes(model_, training_, dims, {8, 1}, MoeRouting());
  EXPECT_NEAR(Term(moe.first_stage, MemoryTerm::kActivations) -
                  Term(dense.first_stage, MemoryTerm::kActivations),
              32 * (block - (2 * s * h + 8 * s * f)), 1);
  // Full recompute keeps layer inputs and one layer's working set, an MoE one.
  ParallelDims full = dims;
  full.recompute = Recompute::kFull;
  ParallelDims dense_full = ExpertDims(1);
  dense_full.recompute = Recompute::kFull;
  const double working_set =
      Term(Estimate(model_, training_, full).first_stage, MemoryTerm::kActivations) -
      Term(Estimate(DenseTwin(), training_, dense_full).first_stage, MemoryTerm::kActivations);
  EXPECT_NEAR(working_set, block - (2 * s * h + 8 * s * f), 1);
}

TEST_F(MixtureOfExpertsMemoryTest, DispatcherBuffersAreTheirOwnTermAndFragment) {
  const ParallelDims dims = ExpertDims(8);
  const MemoryEstimate estimate = Estimate(model_, training_, dims, MemoryOptions());
  const double buffers = Term(estimate.first_stage, MemoryTerm::kMoeDispatcherBuffers);
  EXPECT_DOUBLE_EQ(buffers, DispatcherBufferBytes(model_, training_, dims, {8, 1}, MoeRouting()));
  EXPECT_NEAR(Term(estimate.first_stage, MemoryTerm::kFragmentation),
              0.05 * (AllActivations(estimate.first_stage) + buffers), 1);
  // A dense model has none.
  EXPECT_EQ(Term(Estimate(DenseTwin(), training_, Dims(8, 1, 1, 1, 1)).first_stage,
                 MemoryTerm::kMoeDispatcherBuffers),
            0);
}

TEST_F(MixtureOfExpertsMemoryTest, CapacityFactorBoundsTheRoutedTokens) {
  TrainingOptions options = training_.options();
  options.moe_capacity_factor = 1.0;
  const TrainingSpec capped = *TrainingSpec::Create(options);
  const ParallelDims dims = ExpertDims(8);
  // Balanced top-2 routing sends each of 8 experts 4096 x 2 / 8 tokens: a capacity factor of
  // 1 caps exactly that, so only the dropless default's margin could differ, and it is 1.
  EXPECT_NEAR(Term(Estimate(model_, capped, dims).first_stage, MemoryTerm::kActivations),
              Term(Estimate(model_, training_, dims).first_stage, MemoryTerm::kActivations), 1);
  options.moe_capacity_factor = 0.5;
  EXPECT_LT(Term(Estimate(model_, *TrainingSpec::Create(options), dims).first_stage,
                 MemoryTerm::kActivations),
            Term(Estimate(model_, training_, dims).first_stage, MemoryTerm::kActivations));
}

TEST(MemoryNamesTest, TermAndVerdictNames) {
  EXPECT_STREQ(MemoryTermName(MemoryTerm::kWeights), "weights");
  EXPECT_STREQ(MemoryTermName(MemoryTerm::kGradients), "gradients");
  EXPECT_STREQ(MemoryTermName(MemoryTerm::kOptimizerStates), "optimizer_states");
  EXPECT_STREQ(MemoryTermName(MemoryTerm::kActivations), "activations");
  EXPECT_STREQ(MemoryTermName(MemoryTerm::kEmbeddingActivations), "embedding_activations");
  EXPECT_STREQ(MemoryTermName(MemoryTerm::kOutputActivations), "output_activations");
  EXPECT_STREQ(MemoryTermName(MemoryTerm::kCudaContext), "cuda_context");
  EXPECT_STREQ(MemoryTermName(MemoryTerm::kNcclBuffers), "nccl_buffers");
  EXPECT_STREQ(MemoryTermName(MemoryTerm::kGradientBuckets), "gradient_buckets");
  EXPECT_STREQ(MemoryTermName(MemoryTerm::kPipelineBuffers), "pipeline_buffers");
  EXPECT_STREQ(MemoryTermName(MemoryTerm::kFragmentation), "fragmentation");
  EXPECT_STREQ(MemoryTermName(MemoryTerm::kFp8WeightCopies), "fp8_weight_copies");
  EXPECT_STREQ(MemoryTermName(MemoryTerm::kFp8ScalingState), "fp8_scaling_state");
  EXPECT_STREQ(MemoryTermName(MemoryTerm::kMoeDispatcherBuffers), "moe_dispatcher_buffers");
  EXPECT_STREQ(MemoryVerdictName(MemoryVerdict::kSafe), "SAFE");
  EXPECT_STREQ(MemoryVerdictName(MemoryVerdict::kRisky), "RISKY");
  EXPECT_STREQ(MemoryVerdictName(MemoryVerdict::kOutOfMemory), "OOM");
}

}  // namespace
}  // namespace paratune
