// Who runs what (DESIGN.md §7; docs/scheduler.md, "Dispatch"): the registered workers and the
// probes leased to them, and the one place that changes either. Its invariant: a worker is
// WORKER_BUSY, naming the probe in current_probe, exactly when it holds a share of a live
// lease that it has not reported yet; LOST and IDLE workers hold nothing. Every transition
// below keeps it, and records what it changed (workers, leases) in the ChangeSet, so that the
// store never holds one without the other. What follows for the searches (a re-queue, a
// recorded result) is the caller's: the transitions that end a lease return it.
#ifndef PARATUNE_SERVER_CORE_DISPATCH_H_
#define PARATUNE_SERVER_CORE_DISPATCH_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "proto/worker.pb.h"
#include "proto/worker_service.pb.h"
#include "server/core/change_set.h"
#include "server/core/lease_table.h"
#include "server/core/scheduler_state.pb.h"
#include "server/core/worker_registry.h"

namespace paratune {

// Thread-compatible: the scheduler guards it with its own mutex.
class Dispatch {
 public:
  // Records its changes in `changes`, which must outlive it.
  explicit Dispatch(ChangeSet* changes);
  Dispatch(const Dispatch&) = delete;
  Dispatch& operator=(const Dispatch&) = delete;

  // Registers the worker of a validated request, idle and heartbeating at `now`, with
  // `registered_by` as its registrant (Worker.registered_by). Returns it as stored.
  const v1::Worker& Register(const v1::RegisterWorkerRequest& request,
                             const std::string& registered_by, absl::Time now);
  // Takes over what a restarted scheduler found in the store, as the transitions below stored
  // it: the workers (`last_worker_id` the largest id ever handed out), each with a full
  // heartbeat allowance from `now`, and the leases for which `running` holds (their candidates
  // still run); the others are ended, and a worker that held a share of none is freed.
  void Restore(std::map<int64_t, v1::Worker> workers, int64_t last_worker_id,
               std::vector<internal::LeaseState> leases, absl::Time now,
               absl::FunctionRef<bool(const internal::LeaseState&)> running);

  // The worker heartbeats at `now`: returns the probes it must stop, sorted: those whose
  // lease ended under it, and any of request.running_probes that is not leased to it. A
  // probe leased to it that running_probes leave out is not released (its assignment may
  // still be on its way). NOT_FOUND as WorkerRegistry::FindLive.
  absl::StatusOr<std::vector<std::string>> Heartbeat(const v1::HeartbeatRequest& request,
                                                     absl::Time now);

  // What a worker asking for a probe holds already (Ask).
  struct Asked {
    // The asking worker, live.
    int64_t worker_id = 0;
    // A share it holds but never received, to hand over again: member `member` of this lease.
    const internal::LeaseState* undelivered = nullptr;
    int member = 0;
    // The lease of the probe it ran whose report never arrived, ended: re-queue or give up.
    std::optional<internal::LeaseState> unreported;
  };
  // The worker asks for a probe at `now`, having received request.last_probe() last
  // (docs/scheduler.md, "Lost replies"). A worker asks only when it runs nothing, so a share
  // it holds other than last_probe never reached it (marked delivered now), and one that is
  // last_probe ran without its report arriving: its lease ends. NOT_FOUND as FindLive.
  absl::StatusOr<Asked> Ask(const v1::AcquireProbeRequest& request, absl::Time now);

  // Leases `lease` (lease.h's MakeLease) on its members' workers, which must be live and free,
  // members[0] being the one asking: each is BUSY with it, and members[0] receives its share
  // now. Returns the lease as held.
  const internal::LeaseState& Lease(internal::LeaseState lease);

  // What a member's report did (TakeReport).
  struct Report {
    // The same report was accepted before (its reply was lost): nothing changed.
    bool repeated = false;
    // The lease, with the member's result when OK. Ended (and its members freed, the others
    // told to stop) when every member reported OK or this one reported another outcome; else
    // the member's share finished and the others run on.
    internal::LeaseState lease;
    bool ended = false;
    int member = 0;
  };
  // Whether a result could come from a lease, reported by a worker (result_plausibility.h).
  using PlausibilityCheck = absl::FunctionRef<absl::Status(
      const v1::ProbeResult& result, const internal::LeaseState& lease, const v1::Worker& worker)>;
  // Takes the result a member reports (request.result, checked by ValidateProbeResult and then
  // `plausible` once the probe is known to be leased to it). FAILED_PRECONDITION when the probe
  // is not leased to the worker or it reported a different result for it already;
  // INVALID_ARGUMENT for a malformed or implausible result, which leaves the lease as it was;
  // NOT_FOUND as FindLive.
  absl::StatusOr<Report> TakeReport(const v1::ReportProbeRequest& request,
                                    PlausibilityCheck plausible);

  // Relays gang[0]'s rendezvous token: returns the lease's token (empty until gang[0] sent
  // it). FAILED_PRECONDITION when the probe is not leased to the worker or gang[0] sends a
  // second, different token; INVALID_ARGUMENT when another member sends one; NOT_FOUND as
  // FindLive.
  absl::StatusOr<std::string> Rendezvous(const v1::RendezvousRequest& request);

  // Ends the lease of `probe`, freeing its members; each member that received its share, but
  // `reporter_id` (0: none), is told to stop it at its next heartbeat. Returns the lease;
  // nullopt when `probe` is not leased (an earlier change ended it).
  std::optional<internal::LeaseState> EndLease(const std::string& probe, int64_t reporter_id);
  // Declares the worker LOST: it holds nothing and is told nothing more. Returns the lease it
  // held a share of, ended, if any.
  std::optional<internal::LeaseState> LoseWorker(int64_t worker_id);
  // Forgets the worker (it left); its id is never handed out again. Returns the lease it held
  // a share of, ended, if any; nullopt also for a worker not registered.
  std::optional<internal::LeaseState> Deregister(int64_t worker_id);

  const WorkerRegistry& workers() const { return workers_; }
  const LeaseTable& leases() const { return leases_; }

 private:
  // For tests: plants violations of the invariant for its checker to catch.
  friend class SchedulerInvariants;

  // The only writes of a worker's state: BUSY with `probe`, or IDLE; each stored.
  void Hold(WorkerRegistry::Record& worker, const std::string& probe);
  void Free(WorkerRegistry::Record& worker);
  // Ends the lease of the probe the worker holds, if any (EndLease, the worker reporting).
  std::optional<internal::LeaseState> Release(WorkerRegistry::Record& worker);

  ChangeSet* const changes_;
  WorkerRegistry workers_;
  LeaseTable leases_;
};

}  // namespace paratune

#endif  // PARATUNE_SERVER_CORE_DISPATCH_H_
