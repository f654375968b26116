#include "estimator/estimated_models.h"

#include "absl/strings/str_cat.h"

namespace paratune {

absl::Status CheckModelEstimated(const ModelSpec& model) {
  if (model.is_moe()) {
    return absl::InvalidArgumentError(
        absl::StrCat("model \"", model.name(), "\" is a mixture-of-experts model (",
                     model.moe().num_experts, " experts, top-", model.moe().router_top_k,
                     "): mixture-of-experts models are described but not yet estimated or searched "
                     "(issue 26)"));
  }
  const int64_t llama_head_dim = model.hidden_size() / model.num_attention_heads();
  if (model.head_dim() != llama_head_dim) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model \"", model.name(), "\" has model.head_dim (", model.head_dim(),
        ") other than model.hidden_size / model.num_attention_heads (", llama_head_dim,
        "): such attention is described but not yet estimated or searched (issue 26)"));
  }
  return absl::OkStatus();
}

}  // namespace paratune
