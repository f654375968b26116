#include "estimator/dense_layers_only.h"

#include "absl/strings/str_cat.h"

namespace paratune {

absl::Status CheckDenseLayersOnly(const ModelSpec& model, absl::string_view consumer) {
  if (model.is_moe()) {
    return absl::InvalidArgumentError(
        absl::StrCat("model \"", model.name(), "\" is a mixture-of-experts model (",
                     model.moe().num_experts, " experts, top-", model.moe().router_top_k,
                     "): ", consumer, " cannot handle mixture-of-experts layers yet (issue 26)"));
  }
  const int64_t llama_head_dim = model.hidden_size() / model.num_attention_heads();
  if (model.head_dim() != llama_head_dim) {
    return absl::InvalidArgumentError(
        absl::StrCat("model \"", model.name(), "\" has model.head_dim (", model.head_dim(),
                     ") other than model.hidden_size / model.num_attention_heads (", llama_head_dim,
                     "): ", consumer, " cannot handle such attention yet (issue 26)"));
  }
  return absl::OkStatus();
}

}  // namespace paratune
