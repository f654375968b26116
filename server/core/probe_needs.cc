#include "server/core/probe_needs.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "convert/spec_convert.h"
#include "server/core/gang_placement.h"
#include "server/core/launch_target.h"

namespace paratune {
ProbeNeeds NeedsOf(const v1::SearchSpec& spec, std::string probe, int64_t ranks) {
  ProbeNeeds needs;
  needs.probe = std::move(probe);
  needs.kind = WorkerKindOf(spec);
  needs.gpus_per_node = spec.cluster().gpus_per_node();
  needs.ranks = ranks;
  return needs;
}

ShardGroup ProbeShardGroup(const v1::SearchSpec& spec, const v1::ParallelConfig& config) {
  ShardGroup group;
  group.data_parallel = config.data_parallel();
  if (spec.probe().backend() != "command" || config.data_parallel() <= 1) return group;
  // Called for every queued candidate on every placement pass: the training is converted only
  // for a stored configuration that leaves its sharding to the training's default.
  DataParallelSharding unset = DataParallelSharding::kFull;
  if (config.dp_sharding() == v1::DP_SHARDING_UNSPECIFIED) {
    absl::StatusOr<TrainingSpec> training = TrainingSpecFromProto(spec.training());
    // The search's spec was checked when it was created; should it not convert, every rank
    // (full) is the answer that cannot mismeasure.
    if (training.ok()) unset = training->DefaultDataParallelSharding();
  }
  absl::StatusOr<DataParallelSharding> sharding =
      DataParallelShardingFromProto(config.dp_sharding(), unset, "config.dp_sharding");
  ParallelDims dims;
  dims.dp = config.data_parallel();
  dims.dp_sharding = sharding.ok() ? *sharding : DataParallelSharding::kFull;
  dims.dp_shard_group = config.dp_shard_group();
  group.ranks = DataParallelShardRanks(dims);
  if (group.ranks > 1) group.sharding = dims.dp_sharding;
  return group;
}

std::pair<v1::ProbeScope, ProbeNeeds> ScopedNeedsOf(
    const v1::SearchSpec& spec, const v1::ParallelConfig& config, std::string probe,
    absl::FunctionRef<bool(const ProbeNeeds& full)> can_host) {
  v1::ProbeScope scope = spec.probe().scope();
  ProbeNeeds full =
      NeedsOf(spec, probe, spec.cluster().num_nodes() * spec.cluster().gpus_per_node());
  if (ShardGroup group = ProbeShardGroup(spec, config); group.ranks > 1) {
    full.shard_group = group;
    return {v1::PROBE_SCOPE_FULL, std::move(full)};
  }
  if (scope == v1::PROBE_SCOPE_UNSPECIFIED) {
    scope = can_host(full) ? v1::PROBE_SCOPE_FULL : v1::PROBE_SCOPE_REPLICA;
  }
  if (scope == v1::PROBE_SCOPE_FULL) return {scope, std::move(full)};
  return {scope, NeedsOf(spec, std::move(probe),
                         config.tensor_parallel() * config.pipeline_parallel() *
                             config.context_parallel())};
}

std::string ReservedProbe(const v1::Worker& worker) {
  auto reserved = worker.labels().find(kProbeReservationLabel);
  return reserved == worker.labels().end() ? "" : reserved->second;
}

bool ReservedFor(const v1::Worker& worker, const std::string& probe) {
  return !probe.empty() && ReservedProbe(worker) == probe;
}

std::string WorkerMismatch(const v1::Worker& worker, const ProbeNeeds& needs, bool probe_reserved) {
  const bool reserved_elsewhere =
      worker.labels().contains(kProbeReservationLabel) && !ReservedFor(worker, needs.probe);
  if (reserved_elsewhere) return "it is reserved for another probe";
  if (probe_reserved && !ReservedFor(worker, needs.probe)) {
    return "workers were started for this probe";
  }
  if (std::string mismatch = WorkerKindMismatch(worker, needs.kind); !mismatch.empty()) {
    return mismatch;
  }
  const std::vector<int64_t> shares = NodeShares(needs.ranks, needs.gpus_per_node);
  const int64_t smallest = *std::min_element(shares.begin(), shares.end());
  if (worker.gpus_size() < smallest) {
    return absl::StrCat("it has ", worker.gpus_size(), " GPUs, fewer than a node share of ",
                        smallest);
  }
  return "";
}

std::string DescribeNeeds(const ProbeNeeds& needs) {
  const std::vector<int64_t> shares = NodeShares(needs.ranks, needs.gpus_per_node);
  const WorkerKind& kind = needs.kind;
  const std::string type = kind.gpu_type.empty()
                               ? absl::StrCat("custom GPU (", kind.gpu_memory_bytes, " bytes)")
                               : kind.gpu_type;
  std::string nodes = shares.size() == 1
                          ? absl::StrCat("1 node of ", shares[0], " x ", type)
                          : absl::StrCat(shares.size(), " nodes of ", needs.gpus_per_node, " x ",
                                         type, " (", needs.ranks, " GPUs)");
  absl::StrAppend(&nodes, " with backend ", kind.backend);
  if (!kind.command_template.empty()) {
    absl::StrAppend(&nodes, " and template ", kind.command_template);
  }
  const ShardGroup& group = needs.shard_group;
  if (group.ranks > 1) {
    absl::StrAppend(&nodes,
                    "; every rank: its dp_sharding=", DataParallelShardingName(group.sharding));
    if (group.ranks == group.data_parallel) {
      absl::StrAppend(&nodes, " shards over all ", group.ranks,
                      " data-parallel ranks, and a probe of fewer would shard less");
    } else {
      absl::StrAppend(&nodes, " shards within groups of ", group.ranks, " of its ",
                      group.data_parallel,
                      " data-parallel ranks, and no probe runs one group alone (one replica "
                      "would shard less)");
    }
  }
  return nodes;
}

}  // namespace paratune
