// A Llama-family model's dimensions, validated, and the catalog of published presets.
#ifndef PARATUNE_ESTIMATOR_MODEL_SPEC_H_
#define PARATUNE_ESTIMATOR_MODEL_SPEC_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace paratune {

// Raw dimensions as a user gives them; validated by ModelSpec::Create.
struct ModelDimensions {
  int64_t hidden_size = 0;          // h
  int64_t ffn_hidden_size = 0;      // f (MLP inner width)
  int64_t num_layers = 0;           // L
  int64_t num_attention_heads = 0;  // a
  int64_t num_kv_heads = 0;         // k (GQA)
  int64_t vocab_size = 0;           // V
  bool tied_embeddings = false;
  // SwiGLU (gate, up and down projections, 3fh parameters) as in Llama; false for the
  // non-gated GeLU / squared-ReLU MLP of GPT and Nemotron (up and down, 2fh), which the
  // measured tables of data/measured/ use. The API's ModelSpec has no such field: models
  // given through it are always gated.
  bool gated_mlp = true;
};

// A decoder-only Llama model (RMSNorm, SwiGLU, GQA, rotary), or with gated_mlp = false a
// GPT-style one whose MLP is not gated. Immutable and always valid.
class ModelSpec {
 public:
  // INVALID_ARGUMENT naming the field ("model.num_kv_heads (5) does not divide
  // model.num_attention_heads (32)") when a dimension is out of range or inconsistent.
  static absl::StatusOr<ModelSpec> Create(std::string name, const ModelDimensions& dims);

  const std::string& name() const { return name_; }
  const ModelDimensions& dims() const { return dims_; }
  int64_t hidden_size() const { return dims_.hidden_size; }
  int64_t ffn_hidden_size() const { return dims_.ffn_hidden_size; }
  int64_t num_layers() const { return dims_.num_layers; }
  int64_t num_attention_heads() const { return dims_.num_attention_heads; }
  int64_t num_kv_heads() const { return dims_.num_kv_heads; }
  int64_t vocab_size() const { return dims_.vocab_size; }
  bool tied_embeddings() const { return dims_.tied_embeddings; }
  bool gated_mlp() const { return dims_.gated_mlp; }
  // Weight matrices of size f x h in one MLP: 3 gated (SwiGLU), 2 otherwise.
  double MlpMatrices() const { return dims_.gated_mlp ? 3 : 2; }

  // Parameters of one transformer layer: Q and O (2h^2), K and V (2h^2 k/a), the MLP
  // (MlpMatrices() fh) and two norm weights (2h); Fujii et al. 2024 (arXiv 2411.06465).
  double LayerParameterCount() const;

  // Total parameter count (embedding, layers, final norm, LM head if untied).
  double ParameterCount() const;

 private:
  ModelSpec(std::string name, const ModelDimensions& dims) : name_(std::move(name)), dims_(dims) {}

  std::string name_;
  ModelDimensions dims_;
};

// The catalog preset called `name` (case-insensitive, e.g. "llama3.1-8b"); NOT_FOUND listing
// the known names otherwise.
absl::StatusOr<ModelSpec> FindModelPreset(absl::string_view name);

// Names of every catalog model, in catalog order.
std::vector<std::string> ModelPresetNames();

}  // namespace paratune

#endif  // PARATUNE_ESTIMATOR_MODEL_SPEC_H_
