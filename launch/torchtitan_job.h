// What a TorchTitan job (pytorch/torchtitan v0.2.2, frameworks/torchtitan_v0.2.2_options.txt)
// can run of a paratune configuration: the model's TorchTitan flavor, and the switches of the
// training run and the configuration that the release has no option for. The launch values
// of a template ({torchtitan_flavor}, launch_values.h) carry the verdict, so that a probe and
// an export of the template refuse the same configurations with the same words.
#ifndef PARATUNE_LAUNCH_TORCHTITAN_JOB_H_
#define PARATUNE_LAUNCH_TORCHTITAN_JOB_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "estimator/model_spec.h"
#include "estimator/parallel_config.h"
#include "estimator/training_spec.h"

namespace paratune {

// The release the functions below follow, as templates name it in checked_against.
inline constexpr char kTorchTitanRelease[] = "TorchTitan v0.2.2";

// TorchTitan selects a model by --model.name and --model.flavor, each flavor a fixed set of
// dimensions. The llama3 flavor ("8B", "70B" or "405B") whose dimensions are `model`'s;
// FAILED_PRECONDITION naming the model, its dimensions and the flavors when none is (another
// family, a Llama-2 or Llama-3.2 model, experts, tied embeddings).
absl::StatusOr<std::string> TorchTitanLlamaFlavor(const ModelSpec& model);

// The llama3 flavor that runs `config` of `model` with `training` as stated, when TorchTitan
// v0.2.2 can: TorchTitanLlamaFlavor's error, or FAILED_PRECONDITION naming the field and the
// value it has no option for (tensor parallelism without sequence parallelism, gradients
// reduced in bf16, optimizer-only sharding, unsharded data parallelism beside other
// parallelism).
absl::StatusOr<std::string> TorchTitanFlavorToRun(const ModelSpec& model,
                                                  const TrainingSpec& training,
                                                  const ParallelConfig& config);

}  // namespace paratune

#endif  // PARATUNE_LAUNCH_TORCHTITAN_JOB_H_
