// The workers the scheduler knows (DESIGN.md §7): who is registered, who is live, who is
// free, who could host a probe, and who has gone silent. It returns facts; what follows from
// them (releasing a lost worker's lease, storing the change) is Dispatch's (dispatch.h), the
// one owner of a registry that changes.
#ifndef PARATUNE_SERVER_CORE_WORKER_REGISTRY_H_
#define PARATUNE_SERVER_CORE_WORKER_REGISTRY_H_

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "proto/worker.pb.h"
#include "proto/worker_service.pb.h"
#include "server/core/gang_placement.h"
#include "server/core/probe_needs.h"

namespace paratune {

// Thread-compatible: the scheduler guards it with its own mutex.
class WorkerRegistry {
 public:
  struct Record {
    int64_t id = 0;
    v1::Worker worker;
    absl::Time last_heartbeat;
    // When it last asked for a probe (TryAcquireProbe): a worker that asked within
    // kAskedRecently is parked in its long poll or about to ask again.
    absl::Time last_asked = absl::InfinitePast();
    // Probes to name in the next HeartbeatResponse.cancel_probes.
    std::vector<std::string> cancel_probes;
  };

  // Registers the worker of a validated request, idle and heartbeating at `now`, with the
  // catalog type of its GPUs (CatalogGpuType) in Worker.gpu_type.
  Record& Add(const v1::RegisterWorkerRequest& request, absl::Time now);
  // A worker the store held, given a full heartbeat allowance from `now`.
  Record& Restore(int64_t id, v1::Worker worker, absl::Time now);
  // Forgets the worker (it deregistered). Its id is never handed out again.
  void Remove(int64_t id);
  // Ids up to `id` were handed out before (StoredState.last_worker_id): new ones are larger.
  void ReserveIdsThrough(int64_t id) { last_id_ = std::max(last_id_, id); }

  // The worker called `name`, if registered and not lost. INVALID_ARGUMENT for a malformed
  // name; NOT_FOUND saying to register again otherwise.
  absl::StatusOr<const Record*> FindLive(absl::string_view name) const;
  // The worker with this id, lost or not; nullptr when it is not registered.
  const Record* Find(int64_t id) const;
  // The worker with this id, which must be registered, to change.
  Record& Mutable(int64_t id) { return workers_.at(id); }

  // Live workers silent for longer than `limit` at `now`.
  std::vector<int64_t> Silent(absl::Time now, absl::Duration limit) const;
  // Live workers reserved for `probe` (kProbeReservationLabel).
  std::vector<int64_t> ReservedWorkers(const std::string& probe) const;
  // Every live worker, by id.
  std::vector<const v1::Worker*> Live() const;
  // Where a probe with these needs runs if `requester` asks at `now`: its first node share on
  // the requester, the others on free eligible workers (PlaceGang). nullopt when the
  // requester does not fit (WorkerMismatch), too few others are free, or the probe is one node
  // share that a free eligible worker with fewer GPUs than the requester (but enough) asked
  // for within kAskedRecently: it is left to that worker, so that larger workers stay free
  // for probes only they can host (the requester takes it once that worker stops asking).
  std::optional<std::vector<RankShare>> Place(const ProbeNeeds& needs, const Record& requester,
                                              absl::Time now) const;
  static constexpr absl::Duration kAskedRecently = absl::Seconds(90);
  // How many of the node shares of a probe with these needs the live eligible workers, busy or
  // not, could host at once (HostableShares, gang_placement.h).
  int64_t HostableShares(const ProbeNeeds& needs) const;
  // Whether they could host every node share at once.
  bool CanHost(const ProbeNeeds& needs) const;
  // UnplaceableReason for the live workers: empty when they can host it, busy or not.
  std::string WhyUnplaceable(const ProbeNeeds& needs) const;

  // Every registered worker, by id (lost ones included).
  const std::map<int64_t, Record>& all() const { return workers_; }

 private:
  // Live workers that can host shares of a probe with these needs (WorkerMismatch), free
  // ones only when `free_only`, except `except_id`.
  std::vector<FreeWorker> Eligible(const ProbeNeeds& needs, bool free_only,
                                   int64_t except_id = 0) const;
  bool HasReservedWorkers(const std::string& probe) const;

  std::map<int64_t, Record> workers_;
  int64_t last_id_ = 0;
};

// Whether `hostable` node shares are every node share of a probe with these needs.
bool HostsEveryShare(const ProbeNeeds& needs, int64_t hostable);

// Why a fleet (`fleet`: DescribeFleet) that can host only `hostable` of the node shares of a
// probe with these needs (not HostsEveryShare) cannot host it, for Candidate.waiting_reason
// ("needs 2 nodes of 8 x h100-80gb (16 GPUs) with backend sim; live workers: ...").
std::string UnplaceableReason(const ProbeNeeds& needs, int64_t hostable, absl::string_view fleet);

}  // namespace paratune

#endif  // PARATUNE_SERVER_CORE_WORKER_REGISTRY_H_
