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
#include "proto/search.pb.h"
#include "proto/worker.pb.h"

namespace paratune {

struct ProbeNeeds {
  // searches/{id}/candidates/{n}/probes/{attempt}: the lease it runs (or will run) as.
  std::string probe;
  // What each of its workers must be.
  WorkerKind kind;
  // The cluster's GPUs per node; each worker hosts one node share (gang_placement.h).
  int64_t gpus_per_node = 0;
  // Ranks the probe runs now.
  int64_t ranks = 0;
};

// The needs of a probe `probe` of `ranks` ranks of a search with this spec (normalized:
// ValidateCreateSearchRequest).
ProbeNeeds NeedsOf(const v1::SearchSpec& spec, std::string probe, int64_t ranks);

// The scope of probe `probe` of a candidate with `config` and what it needs: the spec's
// ProbeSettings.scope, or, unset, FULL (every rank of the cluster) when `can_host` says the
// live workers could run every rank at once, busy or not (a full probe measures the
// data-parallel traffic a replica can only model), else REPLICA (tp x pp x cp ranks).
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

// "2 nodes of 8 x h100-80gb (16 GPUs) with backend sim": what the probe needs, for people.
std::string DescribeNeeds(const ProbeNeeds& needs);

}  // namespace paratune

#endif  // PARATUNE_SERVER_CORE_PROBE_NEEDS_H_
