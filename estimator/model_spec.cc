#include "estimator/model_spec.h"

#include <array>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "estimator/field_checks.h"
#include "estimator/field_error.h"

namespace paratune {
namespace {

struct ModelPreset {
  const char* name;
  ModelDimensions dims;
};

constexpr RouterScore kSigmoid = RouterScore::kSigmoid;

// Field order of ModelDimensions: {h, f, L, a, k, V, tied, gated, head_dim, {E, top-k, f_e,
// shared, f_s, layer_step, first_dense_layers, router score}}.
constexpr std::array<ModelPreset, 14> kModelPresets = {{
    // Published configurations (Hugging Face config.json of each meta-llama checkpoint;
    // Touvron et al. 2023, arXiv 2307.09288; Llama Team 2024, arXiv 2407.21783).
    {"llama2-7b", {4096, 11008, 32, 32, 32, 32000, false}},
    {"llama2-13b", {5120, 13824, 40, 40, 40, 32000, false}},
    {"llama2-70b", {8192, 28672, 80, 64, 8, 32000, false}},
    {"llama3.1-8b", {4096, 14336, 32, 32, 8, 128256, false}},
    {"llama3.1-70b", {8192, 28672, 80, 64, 8, 128256, false}},
    {"llama3.1-405b", {16384, 53248, 126, 128, 8, 128256, false}},
    {"llama3.2-1b", {2048, 8192, 16, 32, 8, 128256, true}},
    {"llama3.2-3b", {3072, 8192, 28, 24, 8, 128256, true}},
    // Mixture-of-experts models: Hugging Face config.json of each checkpoint, named below.
    // Mixtral's experts are its intermediate_size-wide MLPs (no separate dense width).
    // mistralai/Mixtral-8x7B-v0.1, config.json: hidden_size 4096, intermediate_size 14336,
    // num_hidden_layers 32, num_attention_heads 32, num_key_value_heads 8, vocab_size 32000,
    // tie_word_embeddings false, num_local_experts 8, num_experts_per_tok 2.
    {"mixtral-8x7b", {4096, 14336, 32, 32, 8, 32000, false, true, 0, {8, 2, 14336, 0, 0, 1, 0}}},
    // mistralai/Mixtral-8x22B-v0.1, config.json: hidden_size 6144, intermediate_size 16384,
    // num_hidden_layers 56, num_attention_heads 48, num_key_value_heads 8, vocab_size 32000,
    // num_local_experts 8, num_experts_per_tok 2.
    {"mixtral-8x22b", {6144, 16384, 56, 48, 8, 32000, false, true, 0, {8, 2, 16384, 0, 0, 1, 0}}},
    // Qwen/Qwen3-30B-A3B, config.json: hidden_size 2048, intermediate_size 6144 (no layer
    // uses it: decoder_sparse_step 1, mlp_only_layers []), num_hidden_layers 48,
    // num_attention_heads 32, num_key_value_heads 4, head_dim 128, vocab_size 151936,
    // tie_word_embeddings false, num_experts 128, num_experts_per_tok 8,
    // moe_intermediate_size 768. Not stated here: the q_norm and k_norm weights (2 x 128 per
    // layer, 12,288 parameters in all).
    {"qwen3-30b-a3b", {2048, 6144, 48, 32, 4, 151936, false, true, 128, {128, 8, 768, 0, 0, 1, 0}}},
    // Qwen/Qwen3-235B-A22B, config.json: hidden_size 4096, intermediate_size 12288 (unused
    // as above), num_hidden_layers 94, num_attention_heads 64, num_key_value_heads 4,
    // head_dim 128, vocab_size 151936, tie_word_embeddings false, num_experts 128,
    // num_experts_per_tok 8, moe_intermediate_size 1536; q_norm and k_norm not stated.
    {"qwen3-235b-a22b",
     {4096, 12288, 94, 64, 4, 151936, false, true, 128, {128, 8, 1536, 0, 0, 1, 0}}},
    // meta-llama/Llama-4-Scout-17B-16E, config.json, text_config: hidden_size 5120,
    // intermediate_size_mlp 16384 (dense layers; Scout has none), intermediate_size 8192
    // (each routed expert and the one shared expert), num_hidden_layers 48,
    // num_attention_heads 40, num_key_value_heads 8, head_dim 128, vocab_size 202048,
    // tie_word_embeddings false, num_local_experts 16, num_experts_per_tok 1,
    // interleave_moe_layer_step 1; sigmoid router (transformers modeling_llama4.py).
    // Approximated: 36 of the 48 layers use rotary embeddings and attend only within chunks
    // of attention_chunk_size 8192 tokens, the other 12 (every 4th, no_rope_layers) attend to
    // every earlier token without rotary embedding; this description has full causal
    // attention with rotary embeddings on every layer. The vision encoder is left out.
    {"llama4-scout",
     {5120, 16384, 48, 40, 8, 202048, false, true, 0, {16, 1, 8192, 1, 8192, 1, 0, kSigmoid}}},
    // meta-llama/Llama-4-Maverick-17B-128E, config.json, text_config: as Scout but
    // num_local_experts 128 and interleave_moe_layer_step 2 (layers 1, 3, ..., 47 hold
    // experts; the others are dense with intermediate_size_mlp 16384). Approximated as Scout.
    {"llama4-maverick",
     {5120, 16384, 48, 40, 8, 202048, false, true, 0, {128, 1, 8192, 1, 8192, 2, 0, kSigmoid}}},
}};

absl::Status ValidateAttention(const ModelDimensions& d) {
  absl::Status status =
      CheckIntInRange("model.num_attention_heads", d.num_attention_heads, 1, d.hidden_size);
  if (!status.ok()) return status;
  if (d.hidden_size % d.num_attention_heads != 0) {
    return FieldError("model.num_attention_heads",
                      absl::StrCat("(", d.num_attention_heads,
                                   ") does not divide model.hidden_size (", d.hidden_size, ")"));
  }
  status = CheckIntInRange("model.num_kv_heads", d.num_kv_heads, 1, d.num_attention_heads);
  if (!status.ok()) return status;
  if (d.num_attention_heads % d.num_kv_heads != 0) {
    return FieldError(
        "model.num_kv_heads",
        absl::StrCat("(", d.num_kv_heads, ") does not divide model.num_attention_heads (",
                     d.num_attention_heads, ")"));
  }
  // 0 is h / a.
  return CheckIntInRange("model.head_dim", d.head_dim, 0, 65536);
}

// A dense model leaves every MoE field at its default.
absl::Status ValidateDenseLeavesMoeUnset(const MoeDimensions& moe) {
  const struct {
    const char* field;
    int64_t value;
    int64_t unset;
  } fields[] = {
      {"model.moe_router_top_k", moe.router_top_k, 0},
      {"model.moe_ffn_hidden_size", moe.expert_ffn_hidden_size, 0},
      {"model.num_shared_experts", moe.num_shared_experts, 0},
      {"model.shared_expert_ffn_hidden_size", moe.shared_expert_ffn_hidden_size, 0},
      {"model.moe_layer_step", moe.layer_step, 1},
      {"model.moe_first_dense_layers", moe.first_dense_layers, 0},
  };
  for (const auto& field : fields) {
    if (field.value != field.unset) {
      return FieldError(field.field, absl::StrCat("(", field.value, ") must be ", field.unset,
                                                  " when model.num_experts is 0 (a dense model)"));
    }
  }
  if (moe.router_score != RouterScore::kSoftmax) {
    return FieldError("model.moe_router_score",
                      "(SIGMOID) must be unset when model.num_experts is 0 (a dense model)");
  }
  return absl::OkStatus();
}

absl::Status ValidateMoe(const MoeDimensions& moe, int64_t num_layers) {
  if (moe.num_experts == 0) return ValidateDenseLeavesMoeUnset(moe);
  absl::Status status = CheckIntInRange("model.num_experts", moe.num_experts, 2, 16384);
  if (!status.ok()) return status;
  status = CheckIntInRange("model.moe_router_top_k", moe.router_top_k, 1, moe.num_experts);
  if (!status.ok()) return status;
  status = CheckIntInRange("model.moe_ffn_hidden_size", moe.expert_ffn_hidden_size, 1, 4194304);
  if (!status.ok()) return status;
  status = CheckIntInRange("model.num_shared_experts", moe.num_shared_experts, 0, 1024);
  if (!status.ok()) return status;
  if (moe.num_shared_experts == 0 && moe.shared_expert_ffn_hidden_size != 0) {
    return FieldError("model.shared_expert_ffn_hidden_size",
                      absl::StrCat("(", moe.shared_expert_ffn_hidden_size,
                                   ") must be 0 when model.num_shared_experts is 0"));
  }
  if (moe.num_shared_experts > 0) {
    status = CheckIntInRange("model.shared_expert_ffn_hidden_size",
                             moe.shared_expert_ffn_hidden_size, 1, 4194304);
    if (!status.ok()) return status;
  }
  status = CheckIntInRange("model.moe_layer_step", moe.layer_step, 1, num_layers);
  if (!status.ok()) return status;
  status =
      CheckIntInRange("model.moe_first_dense_layers", moe.first_dense_layers, 0, num_layers - 1);
  if (!status.ok()) return status;
  // The last MoE layer by the step alone is (L / step) x step - 1; the dense ones must not
  // cover it, or the model has experts nowhere.
  const int64_t last_moe_layer = num_layers / moe.layer_step * moe.layer_step - 1;
  if (moe.first_dense_layers > last_moe_layer) {
    return FieldError("model.moe_first_dense_layers",
                      absl::StrCat("(", moe.first_dense_layers, ") leaves no MoE layer among ",
                                   "model.num_layers (", num_layers,
                                   ") with model.moe_layer_step (", moe.layer_step, ")"));
  }
  return absl::OkStatus();
}

absl::Status Validate(const ModelDimensions& d) {
  // Ranges are those documented on paratune.v1.ModelSpec (proto/specs.proto).
  absl::Status status = CheckIntInRange("model.hidden_size", d.hidden_size, 1, 1048576);
  if (!status.ok()) return status;
  status = CheckIntInRange("model.ffn_hidden_size", d.ffn_hidden_size, 1, 4194304);
  if (!status.ok()) return status;
  status = CheckIntInRange("model.num_layers", d.num_layers, 1, 4096);
  if (!status.ok()) return status;
  status = ValidateAttention(d);
  if (!status.ok()) return status;
  status = CheckIntInRange("model.vocab_size", d.vocab_size, 1, 16777216);
  if (!status.ok()) return status;
  return ValidateMoe(d.moe, d.num_layers);
}

}  // namespace

absl::StatusOr<ModelSpec> ModelSpec::Create(std::string name, const ModelDimensions& dims) {
  absl::Status status = Validate(dims);
  if (!status.ok()) return status;
  return ModelSpec(std::move(name), dims);
}

bool ModelSpec::IsMoeLayer(int64_t layer) const {
  const MoeDimensions& m = dims_.moe;
  return is_moe() && layer >= m.first_dense_layers && (layer + 1) % m.layer_step == 0;
}

int64_t ModelSpec::MoeLayerCount() const {
  if (!is_moe()) return 0;
  // Layers step-1, 2 step-1, ... up to L-1, less those among the first dense ones.
  const MoeDimensions& m = dims_.moe;
  return num_layers() / m.layer_step - m.first_dense_layers / m.layer_step;
}

double ModelSpec::AttentionParameterCount() const {
  const double h = static_cast<double>(hidden_size());
  const double a = static_cast<double>(num_attention_heads());
  const double k = static_cast<double>(num_kv_heads());
  // a d is exactly h when head_dim is h / a, so that a Llama's count is unchanged.
  const double query_width = a * static_cast<double>(head_dim());
  return 2 * h * query_width * (1 + k / a);
}

double ModelSpec::LayerParameterCount() const {
  const double h = static_cast<double>(hidden_size());
  const double f = static_cast<double>(ffn_hidden_size());
  return AttentionParameterCount() + MlpMatrices() * f * h + 2 * h;
}

double ModelSpec::MoeLayerParameterCount(int64_t experts) const {
  if (!is_moe()) return 0;
  const MoeDimensions& m = dims_.moe;
  const double h = static_cast<double>(hidden_size());
  const double router = h * static_cast<double>(m.num_experts);
  const double expert = MlpMatrices() * static_cast<double>(m.expert_ffn_hidden_size) * h;
  const double shared = static_cast<double>(m.num_shared_experts) * MlpMatrices() *
                        static_cast<double>(m.shared_expert_ffn_hidden_size) * h;
  return AttentionParameterCount() + router + static_cast<double>(experts) * expert + shared +
         2 * h;
}

double ModelSpec::ParameterCountWithExperts(int64_t experts) const {
  // Embedding, layers, final norm and the LM head when untied; Fujii et al. 2024 eq. for P.
  const double h = static_cast<double>(hidden_size());
  const double v = static_cast<double>(vocab_size());
  const double lm_head = tied_embeddings() ? 0 : h * v;
  const int64_t moe_layers = MoeLayerCount();
  const double dense = static_cast<double>(num_layers() - moe_layers) * LayerParameterCount();
  // A dense model adds nothing here (0 MoE layers), which keeps its sum bit for bit.
  const double moe =
      moe_layers == 0 ? 0 : static_cast<double>(moe_layers) * MoeLayerParameterCount(experts);
  return h * v + dense + moe + h + lm_head;
}

double ModelSpec::ParameterCount() const {
  return ParameterCountWithExperts(dims_.moe.num_experts);
}

double ModelSpec::ActiveParameterCount() const {
  return ParameterCountWithExperts(dims_.moe.router_top_k);
}

absl::StatusOr<ModelSpec> FindModelPreset(absl::string_view name) {
  const std::string lower = absl::AsciiStrToLower(name);
  for (const ModelPreset& preset : kModelPresets) {
    if (lower == preset.name) return ModelSpec::Create(preset.name, preset.dims);
  }
  return absl::NotFoundError(absl::StrCat("model \"", name, "\" is not in the catalog; known: ",
                                          absl::StrJoin(ModelPresetNames(), ", ")));
}

std::vector<std::string> ModelPresetNames() {
  std::vector<std::string> names;
  names.reserve(kModelPresets.size());
  for (const ModelPreset& preset : kModelPresets) names.emplace_back(preset.name);
  return names;
}

}  // namespace paratune
