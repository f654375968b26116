#include "estimator/training_spec.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
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

const char* TokenDispatcherName(TokenDispatcher dispatcher) {
  switch (dispatcher) {
    case TokenDispatcher::kAllToAll:
      return "alltoall";
    case TokenDispatcher::kAllGather:
      return "allgather";
    case TokenDispatcher::kFlexDeepEp:
    case TokenDispatcher::kFlexHybridEp:
      return "flex";
  }
  return "alltoall";
}

bool IsFlexDispatcher(TokenDispatcher dispatcher) {
  return dispatcher == TokenDispatcher::kFlexDeepEp || dispatcher == TokenDispatcher::kFlexHybridEp;
}

const char* FlexDispatcherBackendName(TokenDispatcher dispatcher) {
  switch (dispatcher) {
    case TokenDispatcher::kFlexDeepEp:
      return "deepep";
    case TokenDispatcher::kFlexHybridEp:
      return "hybridep";
    case TokenDispatcher::kAllToAll:
    case TokenDispatcher::kAllGather:
      break;
  }
  return nullptr;
}

const char* TokenDispatcherChoice(TokenDispatcher dispatcher) {
  switch (dispatcher) {
    case TokenDispatcher::kFlexDeepEp:
      return "flex_deepep";
    case TokenDispatcher::kFlexHybridEp:
      return "flex_hybridep";
    case TokenDispatcher::kAllToAll:
    case TokenDispatcher::kAllGather:
      break;
  }
  return TokenDispatcherName(dispatcher);
}

const char* FrameworkName(Framework framework) {
  switch (framework) {
    case Framework::kMegatron:
      return "megatron";
    case Framework::kTorchTitan:
      return "torchtitan";
  }
  return "megatron";
}

DataParallelSharding TrainingSpec::DefaultDataParallelSharding() const {
  if (!options_.distributed_optimizer) return DataParallelSharding::kNone;
  return options_.framework == Framework::kTorchTitan ? DataParallelSharding::kFull
                                                      : DataParallelSharding::kOptimizer;
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
  if (options.moe_capacity_factor != 0 &&
      !CheckDoublePositiveAtMost("training.moe_capacity_factor", options.moe_capacity_factor,
                                 kMaxMoeCapacityFactor)
           .ok()) {
    return FieldError(
        "training.moe_capacity_factor",
        absl::StrCat("(", options.moe_capacity_factor, ") must be 0 (dropless) or in (0, ",
                     kMaxMoeCapacityFactor, "]"));
  }
  if (options.moe_expert_parallel_overlap &&
      options.moe_token_dispatcher == TokenDispatcher::kAllGather) {
    // megatron/core/transformer/transformer_config.py:2683-2686 at core_v0.19.0.
    return FieldError("training.moe_expert_parallel_overlap",
                      "(true) needs training.moe_token_dispatcher alltoall or flex, not "
                      "allgather: Megatron-LM overlaps only those dispatchers' communication");
  }
  if (options.moe_token_dispatcher == TokenDispatcher::kFlexDeepEp &&
      options.moe_capacity_factor != 0) {
    // The exports pad to capacity with a capacity factor, which DeepEP refuses
    // (megatron/core/transformer/transformer_config.py:1600-1607 at core_v0.19.0).
    return FieldError(
        "training.moe_capacity_factor",
        absl::StrCat("(", options.moe_capacity_factor,
                     ") needs padding to capacity, which training.moe_token_dispatcher "
                     "flex_deepep does not support: use 0 (dropless) or "
                     "flex_hybridep"));
  }
  if (IsFlexDispatcher(options.moe_token_dispatcher) && options.framework != Framework::kMegatron) {
    return FieldError("training.moe_token_dispatcher",
                      absl::StrCat("(", TokenDispatcherChoice(options.moe_token_dispatcher),
                                   ") is Megatron-LM's flex dispatcher; training.framework ",
                                   FrameworkName(options.framework), " has no such dispatcher"));
  }
  if (options.moe_shared_expert_overlap) {
    // megatron/core/transformer/transformer_config.py:1644-1650 and 2706-2708 at core_v0.19.0.
    if (options.moe_token_dispatcher == TokenDispatcher::kAllGather) {
      return FieldError("training.moe_shared_expert_overlap",
                        "(true) needs training.moe_token_dispatcher alltoall or flex, not "
                        "allgather: Megatron-LM overlaps the shared experts only with those "
                        "dispatchers");
    }
    if (options.moe_expert_parallel_overlap) {
      return FieldError("training.moe_shared_expert_overlap",
                        "(true) cannot go with training.moe_expert_parallel_overlap (true): "
                        "Megatron-LM refuses the two overlaps together");
    }
    if (options.framework != Framework::kMegatron) {
      return FieldError("training.moe_shared_expert_overlap",
                        absl::StrCat("(true) is Megatron-LM's --moe-shared-expert-overlap; "
                                     "training.framework ",
                                     FrameworkName(options.framework), " has no such switch"));
    }
  }
  if (options.torch_compile && options.framework != Framework::kTorchTitan) {
    return FieldError("training.torch_compile",
                      absl::StrCat("(true) is TorchTitan's compile.enable; training.framework ",
                                   FrameworkName(options.framework), " has no such switch"));
  }
  if (options.tp_comm_overlap && options.framework == Framework::kTorchTitan &&
      !options.torch_compile) {
    // torchtitan/distributed/tensor_parallel.py maybe_enable_async_tp (v0.2.2) raises
    // "Async TP requires 'model' in --compile.components and --compile.enable".
    return FieldError("training.tp_comm_overlap",
                      "(true) under training.framework torchtitan is its async tensor "
                      "parallelism, which needs training.torch_compile (false) to be true: "
                      "TorchTitan refuses async TP without torch.compile");
  }
  return TrainingSpec(options);
}

}  // namespace paratune
