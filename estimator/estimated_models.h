// Which models the estimator computes figures for. A mixture-of-experts model (and attention
// whose heads are not h / a wide, which only Qwen3's presets use) is described by ModelSpec,
// but the memory and performance models, the planner, the probes and the exports treat every
// layer as a dense Llama layer of width h: until they model experts (issue 26), the two
// places where a model enters estimation, ParallelConfig::Create (one configuration: Estimate,
// probes, replay, exports) and PlanConfigurations (plans and searches), refuse such a model
// here rather than give it a dense model's figures.
#ifndef PARATUNE_ESTIMATOR_ESTIMATED_MODELS_H_
#define PARATUNE_ESTIMATOR_ESTIMATED_MODELS_H_

#include "absl/status/status.h"
#include "estimator/model_spec.h"

namespace paratune {

// OK for a model the estimator estimates. INVALID_ARGUMENT naming the model otherwise:
// 'model "mixtral-8x7b" is a mixture-of-experts model (8 experts, top-2): mixture-of-experts
// models are described but not yet estimated or searched (issue 26)'.
absl::Status CheckModelEstimated(const ModelSpec& model);

}  // namespace paratune

#endif  // PARATUNE_ESTIMATOR_ESTIMATED_MODELS_H_
