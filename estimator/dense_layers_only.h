// The parts of paratune that still treat every layer as a dense Llama layer of width h. The
// estimator, the planner and the sim backend model mixture-of-experts layers and heads of any
// width (issue 26); where a consumer does not yet, it refuses such a model here, naming itself,
// rather than run or write a dense model's version of it.
#ifndef PARATUNE_ESTIMATOR_DENSE_LAYERS_ONLY_H_
#define PARATUNE_ESTIMATOR_DENSE_LAYERS_ONLY_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "estimator/model_spec.h"

namespace paratune {

// OK for a model of dense layers whose heads are h / a wide. INVALID_ARGUMENT naming the model
// and `consumer` otherwise: 'model "mixtral-8x7b" is a mixture-of-experts model (8 experts,
// top-2): the native probe cannot handle mixture-of-experts layers yet (issue 26)'.
absl::Status CheckDenseLayersOnly(const ModelSpec& model, absl::string_view consumer);

}  // namespace paratune

#endif  // PARATUNE_ESTIMATOR_DENSE_LAYERS_ONLY_H_
