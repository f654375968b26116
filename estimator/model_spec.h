// A Llama-family model's dimensions, dense or mixture-of-experts, validated, and the catalog
// of published presets.
#ifndef PARATUNE_ESTIMATOR_MODEL_SPEC_H_
#define PARATUNE_ESTIMATOR_MODEL_SPEC_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace paratune {

// How a router scores the experts before it picks the top k: a softmax over the experts
// (Mixtral, Qwen3-MoE; Megatron-LM --moe-router-score-function softmax) or a sigmoid per
// expert (Llama 4; --moe-router-score-function sigmoid).
enum class RouterScore { kSoftmax, kSigmoid };

// The mixture-of-experts part of a model: which layers replace their MLP with routed experts,
// how many, and how wide. num_experts 0 is a dense model, with every other field at its
// default. Each field names its Hugging Face config.json and Megatron-LM counterparts.
struct MoeDimensions {
  // E routed experts per MoE layer (num_local_experts / num_experts; --num-experts); 0: dense.
  int64_t num_experts = 0;
  // Experts each token is routed to (num_experts_per_tok; --moe-router-topk).
  int64_t router_top_k = 0;
  // Inner width of one routed expert's MLP, f_e (moe_intermediate_size, or Mixtral's and
  // Llama 4's intermediate_size; --moe-ffn-hidden-size).
  int64_t expert_ffn_hidden_size = 0;
  // Experts every token passes through besides the routed ones (Llama 4's shared_expert;
  // DeepSeek's n_shared_experts).
  int64_t num_shared_experts = 0;
  // Inner width of one shared expert's MLP, f_s; 0 when there is none. Megatron-LM's
  // --moe-shared-expert-intermediate-size is num_shared_experts x f_s.
  int64_t shared_expert_ffn_hidden_size = 0;
  // Every layer_step-th layer is MoE, counted as Hugging Face's interleave_moe_layer_step
  // counts them: layers step-1, 2 step-1, ... (0-based). 1: every layer.
  int64_t layer_step = 1;
  // The first layers that stay dense whatever layer_step says (first_k_dense_replace).
  int64_t first_dense_layers = 0;
  RouterScore router_score = RouterScore::kSoftmax;
};

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
  // Width of one attention head d; 0 is h / a, as in Llama. Qwen3 sets it apart (head_dim
  // 128 with h / a = 64): query and output projections are then h x a d, keys and values
  // h x k d.
  int64_t head_dim = 0;
  // Routed experts; dense by default.
  MoeDimensions moe;
};

// A decoder-only Llama model (RMSNorm, SwiGLU, GQA, rotary), or with gated_mlp = false a
// GPT-style one whose MLP is not gated; with moe.num_experts > 0 a mixture-of-experts one
// whose MoE layers hold routed experts (and shared ones) of the same MLP shape in place of
// the MLP. Immutable and always valid.
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
  // d: the given head_dim, or h / a.
  int64_t head_dim() const { return head_dim_; }
  const MoeDimensions& moe() const { return dims_.moe; }
  // Weight matrices of size f x h in one MLP: 3 gated (SwiGLU), 2 otherwise.
  double MlpMatrices() const { return dims_.gated_mlp ? 3 : 2; }

  bool is_moe() const { return dims_.moe.num_experts > 0; }
  // Whether layer `layer` (0-based) holds experts: at or after moe.first_dense_layers
  // (DeepSeek-V3's first_k_dense_replace) and (layer + 1) a multiple of moe.layer_step, as
  // Hugging Face's Llama 4 places them (moe_layers = range(interleave_moe_layer_step - 1, L,
  // interleave_moe_layer_step)). Megatron-LM's integer --moe-layer-freq k counts from layer 0
  // instead (layers 0, k, 2k, ...); its list form states any pattern. False for every layer of
  // a dense model.
  bool IsMoeLayer(int64_t layer) const;
  // Layers that hold experts; 0 for a dense model.
  int64_t MoeLayerCount() const;

  // Parameters of the attention projections: Q and O (2h^2), K and V (2h^2 k/a); Fujii et al.
  // 2024 (arXiv 2411.06465). With head_dim set, Q and O are 2h ad and K and V 2h kd, which is
  // the same when ad = h.
  double AttentionParameterCount() const;

  // Parameters of one dense transformer layer: attention, the MLP (MlpMatrices() fh) and two
  // norm weights (2h); Fujii et al. 2024.
  double LayerParameterCount() const;

  // Parameters of one MoE layer with `experts` routed experts counted: attention and the two
  // norms as in a dense layer, the router h E (a bias-free h x E linear layer in Mixtral, Qwen3-MoE
  // and Llama 4, Hugging Face transformers modeling_{mixtral,qwen3_moe,llama4}.py), `experts` x
  // MlpMatrices() f_e h and the shared experts n_s MlpMatrices() f_s h. 0 for a dense model.
  double MoeLayerParameterCount(int64_t experts) const;

  // Total parameter count (embedding, layers, final norm, LM head if untied); an MoE layer
  // counts all its E routed experts.
  double ParameterCount() const;

  // Parameters one token passes through: ParameterCount() with top-k routed experts in each
  // MoE layer (shared ones, router and embedding included, as Mixtral's "12.9B active of
  // 46.7B", Jiang et al. 2024, arXiv 2401.04088 §2, counts them). ParameterCount() for a
  // dense model.
  double ActiveParameterCount() const;

 private:
  ModelSpec(std::string name, const ModelDimensions& dims)
      : name_(std::move(name)),
        dims_(dims),
        head_dim_(dims.head_dim != 0 ? dims.head_dim
                                     : dims.hidden_size / dims.num_attention_heads) {}

  // ParameterCount() with `experts` routed experts in each MoE layer.
  double ParameterCountWithExperts(int64_t experts) const;

  std::string name_;
  ModelDimensions dims_;
  // dims_.head_dim, or h / a where it is 0: resolved once, as the estimator reads it per
  // estimate.
  int64_t head_dim_;
};

// The catalog preset called `name` (case-insensitive, e.g. "llama3.1-8b", "mixtral-8x7b");
// NOT_FOUND listing the known names otherwise.
absl::StatusOr<ModelSpec> FindModelPreset(absl::string_view name);

// Names of every catalog model, in catalog order.
std::vector<std::string> ModelPresetNames();

}  // namespace paratune

#endif  // PARATUNE_ESTIMATOR_MODEL_SPEC_H_
