#include "estimator/training_spec.h"

#include "absl/status/status.h"
#include "estimator/field_checks.h"

namespace paratune {
absl::StatusOr<TrainingSpec> TrainingSpec::Create(const TrainingOptions& options) {
  // Ranges are those documented on paratune.v1.TrainingSpec (proto/specs.proto).
  absl::Status status = CheckIntInRange("training.global_batch_size", options.global_batch_size, 1,
                                        kMaxGlobalBatchSize);
  if (!status.ok()) return status;
  status = CheckIntInRange("training.seq_len", options.seq_len, 1, 4194304);
  if (!status.ok()) return status;
  if (options.fp8_param_gather && !options.fp8) {
    return absl::InvalidArgumentError(
        "training.fp8_param_gather (true) needs training.fp8 (false) to be true");
  }
  return TrainingSpec(options);
}

}  // namespace paratune
