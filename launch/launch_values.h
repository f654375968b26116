// The placeholders of launch templates (proto/worker_config.proto, CommandTemplate) and their
// values: for one probe's launch on one worker (the command backend), or for a launch of the
// whole configuration for training (what `paratune export` writes).
#ifndef PARATUNE_LAUNCH_LAUNCH_VALUES_H_
#define PARATUNE_LAUNCH_LAUNCH_VALUES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "estimator/cluster_spec.h"
#include "estimator/model_spec.h"
#include "estimator/parallel_config.h"
#include "estimator/training_spec.h"
#include "proto/probe.pb.h"

namespace paratune {

// What values a placeholder takes, so that a template's conditions can be checked when it
// is loaded ("{?recompute=ful}" is a typo, not a condition that never holds).
enum class PlaceholderKind {
  kInteger,          // a decimal integer
  kBoolean,          // "true" or "false"
  kRecompute,        // "none", "selective" or "full"
  kCpCommType,       // "p2p" or "all_gather" (estimator/training_spec.h, CpCommTypeName)
  kRouterScore,      // "softmax" or "sigmoid" (Megatron-LM's --moe-router-score-function)
  kLayerPattern,     // one 0 or 1 per layer, separated by commas ("0,1,0,1")
  kTokenDispatcher,  // "alltoall", "allgather" or "flex" (estimator/training_spec.h,
                     // TokenDispatcherName)
  kFlexBackend,      // "deepep", "hybridep" (FlexDispatcherBackendName) or "none"
  kDpSharding,       // "none", "optimizer", "gradients" or "full" (DataParallelShardingName)
  kNumber,           // a decimal number >= 0, such as 1.25
  kText,             // letters, digits and . , : / _ -
};

struct Placeholder {
  const char* name;
  PlaceholderKind kind;
};

// Every placeholder, in the order docs/backends.md lists and explains them.
const std::vector<Placeholder>& LaunchPlaceholders();

// The placeholder called `name`, or nullptr.
const Placeholder* FindPlaceholder(absl::string_view name);

// OK when `value` is one `placeholder` can take; INVALID_ARGUMENT saying what it takes.
absl::Status CheckPlaceholderValue(const Placeholder& placeholder, absl::string_view value);

// OK when the assignment's gang fields describe a launch this worker can take part in:
// num_ranks is a whole number of tp x pp x cp replicas of `config` (all dp ranks for
// PROBE_SCOPE_FULL) holding whole shard groups where the configuration shards its states (a
// framework shards over the ranks it runs), gang members hold consecutive ranks from 0 adding up to
// num_ranks, gang_index is one of them, gpu_indices has one GPU per rank of this member, and
// hostnames are plain. INVALID_ARGUMENT naming the field and value otherwise.
absl::Status CheckLaunchShape(const v1::ProbeAssignment& assignment, const ParallelConfig& config);

// The value of every placeholder for one launch. Immutable.
class LaunchValues {
 public:
  // One probe's launch on this worker: {probe} is true. `model`, `training` and `config` are
  // the assignment's (config the whole one the candidate names, whatever the probe's scope).
  // `micro_batches_per_step` is the launch's: the full step's (ParallelConfig::NumMicroBatches)
  // or one short-step count of assignment.micro_batch_counts; {gbs} is that many micro-batches
  // of every data-parallel replica the probe runs. `extra_warmup_iterations` is the
  // template's (they count in {train_iters}); `master_port` the port rank 0 listens on.
  // CheckLaunchShape's errors.
  static absl::StatusOr<LaunchValues> ForProbe(const v1::ProbeAssignment& assignment,
                                               const ModelSpec& model, const TrainingSpec& training,
                                               const ParallelConfig& config,
                                               int64_t micro_batches_per_step,
                                               int64_t extra_warmup_iterations, int master_port);

  // A launch of the whole configuration for training, as `paratune export` writes it: {probe}
  // is false, {dp} the configuration's, {gbs} the training run's global batch, {nnodes},
  // {nproc_per_node} and {world_size} the cluster's. The placeholders of one probe's launch
  // on one node ({train_iters}, {node_rank}, {master_addr}, {master_port}, {gpu_ids},
  // {probe_name}) have no value: Get fails for them, so a template element that an export
  // keeps cannot use them. INVALID_ARGUMENT when `config` does not use the cluster's GPUs.
  static absl::StatusOr<LaunchValues> ForExport(const ModelSpec& model,
                                                const TrainingSpec& training,
                                                const ClusterSpec& cluster,
                                                const ParallelConfig& config);

  // The value of placeholder `name`. INVALID_ARGUMENT when there is no such placeholder;
  // FAILED_PRECONDITION when it has none in these values (an export's {master_port}), or
  // none for this configuration ({torchtitan_flavor} where TorchTitanFlavorToRun fails,
  // saying why).
  absl::StatusOr<std::string> Get(absl::string_view name) const;

 private:
  LaunchValues() = default;
  // The placeholders that a probe and an export share: the configuration, the model and the
  // training run's numerics.
  void SetConfiguration(const ModelSpec& model, const TrainingSpec& training,
                        const ParallelConfig& config);
  // {dp}, the data-parallel replicas the launch runs (whole shard groups: CheckLaunchShape),
  // and how sharding splits them: {dp_shard} x {dp_replicate} = {dp}.
  void SetDataParallelShares(const ParallelConfig& config, int64_t dp);
  void SetText(const char* name, std::string value);
  void SetInteger(const char* name, int64_t value);
  void SetBoolean(const char* name, bool value);

  absl::flat_hash_map<std::string, std::string> values_;
  // Why a placeholder that these values could hold has none.
  absl::flat_hash_map<std::string, std::string> no_value_reasons_;
};

}  // namespace paratune

#endif  // PARATUNE_LAUNCH_LAUNCH_VALUES_H_
