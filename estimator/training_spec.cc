#include "estimator/training_spec.h"

#include "absl/status/status.h"
#include "estimator/field_checks.h"
#include "estimator/field_error.h"

namespace paratune {

const char* CpCommTypeName(CpCommType type) {
  switch (type) {
    case CpCommType::kP2p:
      return "p2p";
    case CpCommType::kAllGather:
      return "all_gather";
  }
  return "p2p";
}

absl::StatusOr<TrainingSpec> TrainingSpec::Create(const TrainingOptions& options) {
  // Ranges and rules are those documented on paratune.v1.TrainingSpec (proto/specs.proto),
  // and so are the field names of the messages.
  absl::Status status = CheckIntInRange("training.global_batch_size", options.global_batch_size, 1,
                                        kMaxGlobalBatchSize);
  if (!status.ok()) return status;
  status = CheckIntInRange("training.seq_len", options.seq_len, 1, 4194304);
  if (!status.ok()) return status;
  if (options.fp8_param_gather && !options.fp8) {
    return FieldError("training.fp8_param_gather", "(true) needs training.precision FP8, not BF16");
  }
  if (options.fp8_param_gather && !options.distributed_optimizer) {
    return FieldError("training.fp8_param_gather",
                      "(true) needs training.distributed_optimizer (false) to be true: Megatron-LM "
                      "gathers fp8 weights only with its distributed optimizer");
  }
  return TrainingSpec(options);
}

}  // namespace paratune
