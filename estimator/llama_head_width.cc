#include "estimator/llama_head_width.h"

#include "absl/strings/str_cat.h"

namespace paratune {

absl::Status CheckLlamaHeadWidth(const ModelSpec& model, absl::string_view consumer) {
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
