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

// Published configurations (Hugging Face config.json of each meta-llama checkpoint;
// Touvron et al. 2023, arXiv 2307.09288; Llama Team 2024, arXiv 2407.21783).
constexpr std::array<ModelPreset, 8> kModelPresets = {{
    {"llama2-7b", {4096, 11008, 32, 32, 32, 32000, false}},
    {"llama2-13b", {5120, 13824, 40, 40, 40, 32000, false}},
    {"llama2-70b", {8192, 28672, 80, 64, 8, 32000, false}},
    {"llama3.1-8b", {4096, 14336, 32, 32, 8, 128256, false}},
    {"llama3.1-70b", {8192, 28672, 80, 64, 8, 128256, false}},
    {"llama3.1-405b", {16384, 53248, 126, 128, 8, 128256, false}},
    {"llama3.2-1b", {2048, 8192, 16, 32, 8, 128256, true}},
    {"llama3.2-3b", {3072, 8192, 28, 24, 8, 128256, true}},
}};

absl::Status Validate(const ModelDimensions& d) {
  // Ranges are those documented on paratune.v1.ModelSpec (proto/specs.proto).
  absl::Status status = CheckIntInRange("model.hidden_size", d.hidden_size, 1, 1048576);
  if (!status.ok()) return status;
  status = CheckIntInRange("model.ffn_hidden_size", d.ffn_hidden_size, 1, 4194304);
  if (!status.ok()) return status;
  status = CheckIntInRange("model.num_layers", d.num_layers, 1, 4096);
  if (!status.ok()) return status;
  status = CheckIntInRange("model.num_attention_heads", d.num_attention_heads, 1, d.hidden_size);
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
  return CheckIntInRange("model.vocab_size", d.vocab_size, 1, 16777216);
}

}  // namespace

absl::StatusOr<ModelSpec> ModelSpec::Create(std::string name, const ModelDimensions& dims) {
  absl::Status status = Validate(dims);
  if (!status.ok()) return status;
  return ModelSpec(std::move(name), dims);
}

double ModelSpec::LayerParameterCount() const {
  const double h = static_cast<double>(hidden_size());
  const double a = static_cast<double>(num_attention_heads());
  const double k = static_cast<double>(num_kv_heads());
  const double f = static_cast<double>(ffn_hidden_size());
  return 2 * h * h * (1 + k / a) + MlpMatrices() * f * h + 2 * h;
}

double ModelSpec::ParameterCount() const {
  // Embedding, layers, final norm and the LM head when untied; Fujii et al. 2024 eq. for P.
  const double h = static_cast<double>(hidden_size());
  const double v = static_cast<double>(vocab_size());
  const double lm_head = tied_embeddings() ? 0 : h * v;
  return h * v + static_cast<double>(num_layers()) * LayerParameterCount() + h + lm_head;
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
