// The guard of the parts of paratune whose attention still assumes Llama's heads, h / a wide.
// The estimator, the planner and the sim backend model heads of any width (issue 26: Qwen3's
// head_dim 128 with h / a = 64); where a consumer does not yet, it refuses such a model here,
// naming itself, rather than run a model with h / a wide heads in its place.
#ifndef PARATUNE_ESTIMATOR_LLAMA_HEAD_WIDTH_H_
#define PARATUNE_ESTIMATOR_LLAMA_HEAD_WIDTH_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "estimator/model_spec.h"

namespace paratune {

// OK for a model (dense or mixture-of-experts) whose heads are h / a wide. INVALID_ARGUMENT
// naming the model, the field, its value and `consumer` otherwise: 'model "wide" has
// model.head_dim (256) other than model.hidden_size / model.num_attention_heads (128): the
// native probe cannot handle such attention yet (issue 26)'.
absl::Status CheckLlamaHeadWidth(const ModelSpec& model, absl::string_view consumer);

}  // namespace paratune

#endif  // PARATUNE_ESTIMATOR_LLAMA_HEAD_WIDTH_H_
