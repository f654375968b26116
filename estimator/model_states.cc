#include "estimator/model_states.h"

namespace paratune {
namespace {

constexpr double kBf16Bytes = 2;
constexpr double kFp32Bytes = 4;
// Adam's fp32 master weights and two moments.
constexpr double kMegatronOptimizerBytes = 12;
// AdamW's two fp32 moments: the fp32 parameter is its own master weight.
constexpr double kTorchTitanOptimizerBytes = 8;

// Whether TorchTitan keeps each unit's gathered weights from its forward to its backward:
// reshard_after_forward is off for its ZeRO-2 and under pipeline parallelism
// (torchtitan/parallelisms/parallelize_llama.py, apply_fsdp).
bool KeepsWeightsGathered(const TrainingSpec& training, DataParallelSharding sharding,
                          bool pipelined) {
  return training.framework() == Framework::kTorchTitan &&
         (sharding == DataParallelSharding::kGradients ||
          (sharding == DataParallelSharding::kFull && pipelined));
}

// Whether a stage's unsharded gradients accumulate across micro-batches and are reduced once,
// at the last backward: PyTorch's pipeline schedules under TorchTitan's FSDP.
bool AccumulatesUnshardedGradients(const TrainingSpec& training, DataParallelSharding sharding,
                                   bool pipelined) {
  return training.framework() == Framework::kTorchTitan && pipelined && ShardsGradients(sharding);
}

// `bytes` per parameter, divided over `shard_ranks` where `sharded`.
double Share(double bytes, bool sharded, double shard_ranks) {
  return sharded ? bytes / shard_ranks : bytes;
}

}  // namespace

ModelStateBytes ShardedModelStates(const TrainingSpec& training, DataParallelSharding sharding,
                                   double params, double weight_bytes, double shard_ranks) {
  ModelStateBytes bytes;
  if (training.framework() == Framework::kTorchTitan) {
    const bool sharded = sharding != DataParallelSharding::kNone;
    bytes.weights = Share(kFp32Bytes, sharded, shard_ranks) * params;
    bytes.gradients = Share(kFp32Bytes, sharded, shard_ranks) * params;
    bytes.optimizer_states = Share(kTorchTitanOptimizerBytes, sharded, shard_ranks) * params;
    return bytes;
  }
  const double gradient_bytes = training.fp32_gradients() ? kFp32Bytes : kBf16Bytes;
  bytes.weights = Share(weight_bytes, ShardsWeights(sharding), shard_ranks) * params;
  bytes.gradients = Share(gradient_bytes, ShardsGradients(sharding), shard_ranks) * params;
  bytes.optimizer_states =
      Share(kMegatronOptimizerBytes, ShardsOptimizerStates(sharding), shard_ranks) * params;
  return bytes;
}

double GatheredWeightBytes(const TrainingSpec& training, DataParallelSharding sharding,
                           bool pipelined, double stage_params, double largest_unit_params) {
  if (KeepsWeightsGathered(training, sharding, pipelined)) return kBf16Bytes * stage_params;
  if (sharding == DataParallelSharding::kFull) return 2 * kBf16Bytes * largest_unit_params;
  return 0;
}

double AccumulatedGradientBytes(const TrainingSpec& training, DataParallelSharding sharding,
                                bool pipelined, double stage_params) {
  if (!AccumulatesUnshardedGradients(training, sharding, pipelined)) return 0;
  return kFp32Bytes * stage_params;
}

DataParallelTraffic DataParallelTrafficPerStep(const TrainingSpec& training,
                                               DataParallelSharding sharding, bool pipelined,
                                               double micro_batches) {
  if (sharding == DataParallelSharding::kNone) return {0, 1};
  if (AccumulatesUnshardedGradients(training, sharding, pipelined)) return {1, 1};
  if (KeepsWeightsGathered(training, sharding, pipelined)) return {micro_batches, micro_batches};
  if (sharding == DataParallelSharding::kFull) return {2 * micro_batches, micro_batches};
  if (sharding == DataParallelSharding::kGradients) return {1, micro_batches};
  return {1, 1};
}

}  // namespace paratune
