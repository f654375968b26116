// What a probe needs of the workers it runs on (docs/scheduler.md, "Placement"), and why a
// worker does not fit: its kind (convert/worker_kind.h: the search's GPU type, the backend and
// launch template), a node share's worth of GPUs, and the Slurm launcher's reservations. Pure.
#ifndef PARATUNE_SERVER_CORE_PROBE_NEEDS_H_
#define PARATUNE_SERVER_CORE_PROBE_NEEDS_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "convert/worker_kind.h"
#include "estimator/data_parallel_sharding.h"
#include "proto/search.pb.h"
#include "proto/worker.pb.h"

namespace paratune {

// The data-parallel ranks over which a configuration shards its states.
struct ShardGroup {
  DataParallelSharding sharding = DataParallelSharding::kNone;
  // Data-parallel ranks of one group: dp_shard_group, or every one without hybrid sharding;
  // 1 when nothing is sharded.
  int64_t ranks = 1;
  // The configuration's data-parallel ranks, a multiple of `ranks`.
  int64_t data_parallel = 1;
};

struct ProbeNeeds {
  // searches/{id}/candidates/{n}/probes/{attempt}: the lease it runs (or will run) as.
  std::string probe;
  // What each of its workers must be.
  WorkerKind kind;
  // The cluster's GPUs per node; each worker hosts one node share (gang_placement.h).
  int64_t gpus_per_node = 0;
  // Ranks the probe runs now.
  int64_t ranks = 0;
  // Set (ranks > 1) when the probe runs every rank because of this group (ProbeShardGroup).
  ShardGroup shard_group;
};

// The needs of a probe `probe` of `ranks` ranks of a search with this spec (normalized:
// ValidateCreateSearchRequest).
ProbeNeeds NeedsOf(const v1::SearchSpec& spec, std::string probe, int64_t ranks);

// The shard group a probe of `config` must hold whole so that it shards the states as the
// configuration does: with the command backend, whose framework shards over the
// data-parallel ranks it runs (launch/launch_values.h, {dp_shard}), the group of a
// configuration that shards anything; otherwise none (ranks 1). The other backends measure
// the configuration's shards whatever ranks they run: cuda allocates one rank's shard of the
// configuration (worker/probe/footprint_plan.h), sim models it, replay looks it up. `spec`
// normalized (ValidateCreateSearchRequest).
ShardGroup ProbeShardGroup(const v1::SearchSpec& spec, const v1::ParallelConfig& config);

// The scope of probe `probe` of a candidate with `config` and what it needs: FULL (every rank
// of the cluster) when ProbeShardGroup has more than one rank, whatever the spec says, as
// the workers run no probe between one replica and every rank (a replica would shard less
// than the configuration: its memory and its optimizer step would be another
// configuration's); otherwise the spec's ProbeSettings.scope, or, unset, FULL when
// `can_host` says the live workers could run every rank at once, busy or not (a full probe
// measures the data-parallel traffic a replica can only model), else REPLICA (tp x pp x cp
// ranks).
std::pair<v1::ProbeScope, ProbeNeeds> ScopedNeedsOf(
    const v1::SearchSpec& spec, const v1::ParallelConfig& config, std::string probe,
    absl::FunctionRef<bool(const ProbeNeeds& full)> can_host);

// Why `worker` cannot host any share of a probe with these needs, for people (e.g. "its GPUs
// are a100-40gb, not h100-80gb"); empty when it can host at least the smallest share. Only
// what the worker is matters here, not whether it is busy or alive. `probe_reserved`: live
// workers are reserved for this probe, which then runs on those only.
std::string WorkerMismatch(const v1::Worker& worker, const ProbeNeeds& needs, bool probe_reserved);

// The probe the worker is reserved for (kProbeReservationLabel); empty when none.
std::string ReservedProbe(const v1::Worker& worker);
// Whether the worker is reserved for the probe called `probe`.
bool ReservedFor(const v1::Worker& worker, const std::string& probe);

// "2 nodes of 8 x h100-80gb (16 GPUs) with backend sim": what the probe needs, for people,
// and why every rank when the sharding asks for it ("; every rank: its dp_sharding=optimizer
// shards over all 4 data-parallel ranks, and a probe of fewer would shard less").
std::string DescribeNeeds(const ProbeNeeds& needs);

}  // namespace paratune

#endif  // PARATUNE_SERVER_CORE_PROBE_NEEDS_H_
