// The shape and numerics of one training run.
#ifndef PARATUNE_ESTIMATOR_TRAINING_SPEC_H_
#define PARATUNE_ESTIMATOR_TRAINING_SPEC_H_

#include <cstdint>

#include "absl/status/statusor.h"

namespace paratune {

// The largest global batch (TrainingSpec::Create), in sequences.
inline constexpr int64_t kMaxGlobalBatchSize = 16'777'216;

struct TrainingOptions {
  int64_t global_batch_size = 0;  // sequences per optimizer step
  int64_t seq_len = 0;            // tokens per sequence
  bool fp8 = false;               // fp8 GEMMs (bf16 otherwise)
  // fp8 model weights (Megatron-LM --fp8-param-gather, Transformer Engine fp8_model_init):
  // the linear weights are kept in fp8 instead of bf16. Only with fp8. The paratune.v1 API has
  // no field for it yet, so API plans assume it off (the larger memory estimate).
  bool fp8_param_gather = false;
  bool distributed_optimizer = true;  // optimizer states sharded over dp x cp
  bool fp32_gradients = true;         // 4-byte gradients (2 when false)
  bool flash_attention = true;
  // Tensor-parallel communication overlapped with the GEMMs (Megatron-LM --tp-comm-overlap,
  // NeMo's tp_comm_overlap, Transformer Engine userbuffers); off by default, as in
  // Megatron-LM. The paratune.v1 API has no field for it yet, so API plans assume it off.
  bool tp_comm_overlap = false;
};

// Immutable and always valid.
class TrainingSpec {
 public:
  // INVALID_ARGUMENT naming the field ("training.seq_len (0) must be in [1, 4194304]"), or
  // fp8_param_gather without fp8.
  static absl::StatusOr<TrainingSpec> Create(const TrainingOptions& options);

  const TrainingOptions& options() const { return options_; }
  int64_t global_batch_size() const { return options_.global_batch_size; }
  int64_t seq_len() const { return options_.seq_len; }
  bool fp8() const { return options_.fp8; }
  bool fp8_param_gather() const { return options_.fp8_param_gather; }
  bool distributed_optimizer() const { return options_.distributed_optimizer; }
  bool fp32_gradients() const { return options_.fp32_gradients; }
  bool flash_attention() const { return options_.flash_attention; }
  bool tp_comm_overlap() const { return options_.tp_comm_overlap; }

 private:
  explicit TrainingSpec(const TrainingOptions& options) : options_(options) {}

  TrainingOptions options_;
};

}  // namespace paratune

#endif  // PARATUNE_ESTIMATOR_TRAINING_SPEC_H_
