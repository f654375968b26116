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
  int64_t ffn_hidden_size = 0;      // f (SwiGLU inner width)
  int64_t num_layers = 0;           // L
  int64_t num_attention_heads = 0;  // a
  int64_t num_kv_heads = 0;         // k (GQA)
  int64_t vocab_size = 0;           // V
  bool tied_embeddings = false;
};

// A decoder-only Llama model (RMSNorm, SwiGLU, GQA, rotary). Immutable and always valid.
class ModelSpec {
 public:
  // INVALID_ARGUMENT naming the field ("model.num_kv_heads (5) does not divide
  // model.num_attention_heads (32)") when a dimension is out of range or inconsistent.
  static absl::StatusOr<ModelSpec> Create(std::string name,
                                          const ModelDimensions& dims);

  const std::string& name() const { return name_; }
  const ModelDimensions& dims() const { return dims_; }
  int64_t hidden_size() const { return dims_.hidden_size; }
  int64_t ffn_hidden_size() const { return dims_.ffn_hidden_size; }
  int64_t num_layers() const { return dims_.num_layers; }
  int64_t num_attention_heads() const { return dims_.num_attention_heads; }
  int64_t num_kv_heads() const { return dims_.num_kv_heads; }
  int64_t vocab_size() const { return dims_.vocab_size; }
  bool tied_embeddings() const { return dims_.tied_embeddings; }

  // Total parameter count (embedding, layers, final norm, LM head if untied).
  double ParameterCount() const;

 private:
  ModelSpec(std::string name, const ModelDimensions& dims)
      : name_(std::move(name)), dims_(dims) {}

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
