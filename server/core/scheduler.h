// The scheduler's core (DESIGN.md §6, §7): creates searches from validated specs, lets each
// search's policy choose what to probe, leases probes to workers that can host them (alone
// or in gangs), records their results, re-queues the probes of lost workers, keeps
// everything in a SearchStore so that a restarted server resumes where it stopped, and tells
// observers about every change once it is stored. The gRPC services are thin adapters over
// it; everything here is testable without gRPC and with a fake clock.
//
// It holds the cascades (a lost worker releases its lease, which re-queues its probe, which
// may end its search); the facts come from components it owns: the workers and their leases
// (dispatch.h, the one place that changes either), the queue (probe_queue.h), the changes not
// yet stored (change_set.h), and each active search's own bookkeeping and policy
// (active_search.h). Clients call the Scheduler; workers and launchers call its Fleet.
// Implemented in scheduler.cc (the clients' calls and the cascades), scheduler_fleet.cc (the
// Fleet) and scheduler_recovery.cc (resuming from the store).
#ifndef PARATUNE_SERVER_CORE_SCHEDULER_H_
#define PARATUNE_SERVER_CORE_SCHEDULER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "proto/autotuner_service.pb.h"
#include "proto/probe.pb.h"
#include "proto/search.pb.h"
#include "proto/worker_service.pb.h"
#include "server/core/active_search.h"
#include "server/core/change_set.h"
#include "server/core/dispatch.h"
#include "server/core/gang_placement.h"
#include "server/core/hosting_memo.h"
#include "server/core/launch_target.h"
#include "server/core/limits.h"
#include "server/core/principal.h"
#include "server/core/probe_needs.h"
#include "server/core/probe_queue.h"
#include "server/core/probes_queued_listener.h"
#include "server/core/resource_names.h"
#include "server/core/scheduler_state.pb.h"
#include "server/core/scheduler_stats.h"
#include "server/core/search_budget.h"
#include "server/core/search_observer.h"
#include "server/core/search_reader.h"
#include "server/core/search_store.h"
#include "server/core/search_summary.h"
#include "server/core/worker_registry.h"

namespace paratune {

// Thread-safe: every public method, and the Fleet's, may be called from any thread. Lock
// order: the scheduler's lock, then an observer's; listeners are called with no scheduler
// lock held.
class Scheduler {
 public:
  struct Options {
    // Source of time for heartbeats, leases and timestamps; RealClock() when null.
    Clock* clock = nullptr;
    // How often workers are told to heartbeat.
    absl::Duration heartbeat_interval = absl::Seconds(2);
    // A worker silent for this many intervals is LOST and its probe re-queued.
    int64_t missed_heartbeats_until_lost = 3;
    // How long past a probe's deadline a heartbeating worker may stay silent about it
    // before the lease expires and the probe is re-queued.
    absl::Duration lease_grace = absl::Seconds(30);
    // Per-principal limits and the cap on enumerated configurations (server/core/limits.h).
    // Searches count against their creator; without principals, all against one anonymous
    // principal. Admins' searches are exempt.
    Limits limits;
    // Whether the principal of this name is an admin now, for the searches resumed from the
    // store, whose creators' roles are not stored (roles belong to the token file, which may
    // have changed across the restart); null: none is.
    std::function<bool(absl::string_view principal)> is_admin;
  };

  // What Watch starts from.
  struct WatchStart {
    // The search now, as stored (candidates in selection order): WatchSearch's first response.
    v1::Search search;
    // True when the search had already ended: the observer was not registered.
    bool ended = false;
  };

  // The scheduler as the fleet sees it: the WorkerService's calls (each but RegisterWorker:
  // NOT_FOUND when the worker is unknown or was declared lost, and it must register again;
  // the store's error when the change cannot be stored, and the worker retries, a retried
  // report being recognised), what a launcher of workers sees (LaunchTarget), and who hears
  // that probes were queued.
  class Fleet : public LaunchTarget {
   public:
    // Records the caller as the worker's registrant (Worker.registered_by, stored with it, so
    // it survives restarts). INVALID_ARGUMENT naming the field for a bad hostname, GPU list,
    // backend or label.
    absl::StatusOr<v1::RegisterWorkerResponse> RegisterWorker(
        const v1::RegisterWorkerRequest& request, const Caller& caller = std::nullopt);
    // Whether `caller` may act as `worker` (the other WorkerService calls): OK when it
    // registered the worker, is an admin or the server has no principals, and for a worker
    // unknown here (the call itself then answers). NOT_FOUND saying to register again for a
    // worker another principal registered; INVALID_ARGUMENT for a malformed name.
    absl::Status CheckWorkerAccess(absl::string_view worker, const Caller& caller) const;
    // Removes the worker; a probe it held is handed back (re-queued or failed, with the
    // reason). OK also for a worker already unknown or lost. INVALID_ARGUMENT for a malformed
    // name or a reason over 1,024 bytes.
    absl::Status DeregisterWorker(const v1::DeregisterWorkerRequest& request);
    // Returns the probes the worker must stop: those of cancelled searches, re-leased ones,
    // and any it runs that are not leased to it. A probe leased to the worker that its
    // running_probes leave out is not released: its assignment may still be on the way to
    // the worker, whose next TryAcquireProbe settles it. INVALID_ARGUMENT naming the field for
    // running_probes of more than 64 entries or a malformed one (ValidateHeartbeatRequest).
    absl::StatusOr<v1::HeartbeatResponse> Heartbeat(const v1::HeartbeatRequest& request);
    // Hands the worker the share it holds but never received, if any: a gang share leased
    // while it was not asking, or one whose reply was lost (a store write that failed, a
    // server killed before answering, the network). A worker runs one probe at a time and
    // asks only when it runs none, so every share it holds other than request.last_probe is
    // one it never received: the same assignment comes back, no attempt counted. A held share
    // that is its last_probe ran without its report arriving and is given up (re-queued or
    // failed, the attempt counted). Else leases the next queued probe this worker can host
    // the first node share of (probe_needs.h, gang_placement.h), round-robin between
    // searches, with the other shares on other free workers that can host them; those
    // members receive their shares at their next call. nullopt when nothing can be placed
    // now. INVALID_ARGUMENT naming the field for a wait_seconds out of range or a last_probe
    // that is neither empty nor a probe name (ValidateAcquireProbeRequest).
    absl::StatusOr<std::optional<v1::ProbeAssignment>> TryAcquireProbe(
        const v1::AcquireProbeRequest& request);
    // Records one member's result. The probe ends when every member reported PROBE_OK, or at
    // once when one reports another outcome (the others are told to stop); INFRA_ERROR then
    // re-queues it while attempts remain. OK once the result is stored, and again for a retry
    // of the same report. FAILED_PRECONDITION when the probe is not leased to the worker
    // (cancelled, re-leased) or the worker reported a different result for it already;
    // INVALID_ARGUMENT for a malformed probe name or result.
    absl::Status ReportProbe(const v1::ReportProbeRequest& request);
    // Relays gang[0]'s rendezvous token to the members. FAILED_PRECONDITION when the probe is
    // not leased to the worker or gang[0] sends a second, different token; INVALID_ARGUMENT
    // for a malformed probe name, or when another member sends a token or it exceeds 4,096
    // bytes.
    absl::StatusOr<v1::RendezvousResponse> Rendezvous(const v1::RendezvousRequest& request);

    // `listener` hears of every queueing from now until RemoveListener; not owned.
    void AddListener(ProbesQueuedListener* listener);
    // No call to `listener` is in progress or follows once this returns.
    void RemoveListener(ProbesQueuedListener* listener);

    // LaunchTarget (launch_target.h).
    std::vector<PendingProbe> PendingProbes() override;
    absl::Status LaunchEnded(absl::string_view probe, const std::string& reason) override;
    absl::Status LaunchRefused(absl::string_view probe, const std::string& reason) override;

   private:
    friend class Scheduler;
    explicit Fleet(Scheduler* scheduler) : scheduler_(*scheduler) {}

    // Counts the attempt of a launch that ended (or was refused, `how`) before its probe
    // started: re-queues or fails it with `reason`, and ends the search when refusals in a row
    // reached the search's limit. False when the probe had moved on (nothing done).
    bool CountLaunchAttemptLocked(const ProbeId& id, const std::string& reason,
                                  ActiveSearch::Unfinished how)
        ABSL_EXCLUSIVE_LOCKS_REQUIRED(scheduler_.mu_);

    Scheduler& scheduler_;
  };

  // A scheduler over `store`, resuming what it holds: unfinished searches continue with their
  // queued candidates queued again in order; probes leased before keep their leases, so their
  // workers' reports are accepted and a lease whose AcquireProbe reply the stop cut off is
  // handed over again (they expire as usual otherwise); known workers get a fresh heartbeat
  // allowance. Errors are the store's.
  static absl::StatusOr<std::unique_ptr<Scheduler>> Create(Options options,
                                                           std::unique_ptr<SearchStore> store);
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Autotuner API. Searches come back with their candidates ranked (search_reader.h).

  // The calls that name a search take the caller (server/core/principal.h): a client principal
  // reaches only the searches it created; for it, others' are NOT_FOUND, worded as for a
  // search that does not exist.

  // Validates and plans the spec, stores the search with the caller as its creator and
  // queues what its policy picks first (TOP_K and EXHAUSTIVE everything, ADAPTIVE a few).
  // Returns the search PROBING, or FAILED with the reason when no candidate is memory-safe.
  // INVALID_ARGUMENT naming the field for a bad request, or naming --max_enumerated_candidates
  // for a spec enumerating more (checked before planning); RESOURCE_EXHAUSTED naming
  // --max_searches_per_principal when a non-admin caller has that many unfinished searches;
  // queued probes of a caller with max_probes_in_flight_per_principal running wait, saying
  // so in their waiting_reason. UNAVAILABLE after Shutdown; the
  // store's error when the search cannot be stored (then nothing of it remains).
  absl::StatusOr<v1::Search> CreateSearch(const v1::CreateSearchRequest& request,
                                          const Caller& caller = std::nullopt);
  // The read-only calls (GetSearch, ListSearches, ListSearchEvents, ListWorkers): answered
  // from the store without the scheduler's lock.
  const SearchReader& reader() const { return reader_; }
  // Drops queued probes, tells workers to stop running ones and ends the search CANCELLED.
  // NOT_FOUND when there is no such search; FAILED_PRECONDITION when it already ended; the
  // store's error when the cancellation cannot be stored (it is retried with the next
  // change, and the search stays cancelled).
  // The event and the stop reason name the caller.
  absl::StatusOr<v1::Search> CancelSearch(absl::string_view name,
                                          const Caller& caller = std::nullopt);
  // Registers `observer` for the search's changes until it ends, Unwatch or Shutdown.
  // NOT_FOUND / INVALID_ARGUMENT as GetSearch; UNAVAILABLE after Shutdown.
  absl::StatusOr<WatchStart> Watch(absl::string_view name, SearchObserver* observer,
                                   const Caller& caller = std::nullopt);
  // Removes `observer`; no call to it is in progress or follows once this returns.
  void Unwatch(absl::string_view name, SearchObserver* observer);

  // What the WorkerService and launchers call.
  Fleet& fleet() { return fleet_; }

  // Declares workers silent for missed_heartbeats_until_lost intervals LOST, expires overdue
  // leases, re-queueing their probes (or failing them when attempts are spent), and ends
  // searches past their budget's deadline. Call periodically.
  void CheckLeases();

  // Tells every observer the scheduler is going away and refuses new searches and watches.
  void Shutdown();

  // Counts for monitoring (searches, probe results, queue, workers), read under the lock.
  SchedulerStats Stats() const;

  const Limits& limits() const { return options_.limits; }

 private:
  // For tests: checks the invariants between calls, and plants violations for it to catch.
  friend class SchedulerInvariants;

  Scheduler(Options options, std::unique_ptr<SearchStore> store);

  // Rebuilds searches, workers, leases and the queue from the store (Create).
  absl::Status RecoverLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Commits the pending changes (ChangeSet::Commit), logging a failure.
  absl::Status CommitLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Runs `change` under the lock, retires the searches it ended and commits what it changed
  // (even when it failed part way); then, with the lock released, tells the listeners if
  // probes were queued. Returns the change's error, else the commit's. Every call that stores
  // changes runs through it but CreateSearch (StartSearchLocked).
  absl::Status Mutate(absl::FunctionRef<absl::Status()> change) ABSL_LOCKS_EXCLUDED(mu_);
  // Stores new search `search` with `events`, then lets it run (Advance): two commits, since
  // it is stored before its probes are queued. Returns it as created; the store's error when
  // it cannot be stored, and then nothing of it remains.
  absl::StatusOr<v1::Search> StartSearchLocked(ActiveSearch search,
                                               std::vector<v1::SearchEvent> events)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void NotifyListeners() ABSL_LOCKS_EXCLUDED(mu_);

  // The search `id` if it has not ended; nullptr once it ended, even in the change that
  // ended it (it leaves active_ at the end of that change: RetireEndedLocked).
  ActiveSearch* FindLiveLocked(int64_t id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Forgets the searches that ended, counting them in the ended totals: the last step of
  // every change, so that no step holds a search that another erased.
  void RetireEndedLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Queues candidate n.
  void QueueLocked(const ActiveSearch& record, int64_t n) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Drops search `id`'s queued probes and, when stop_running, ends its leases (their workers
  // are told to stop).
  void StopProbingLocked(int64_t id, bool stop_running) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Ends `record`'s search with `state` and stop reason `reason`, stopping all its probes;
  // the caller publishes it with its event.
  void EndSearchLocked(ActiveSearch& record, v1::SearchState state, const std::string& reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Adds the record's search and `events` (stamped with the time now) to the pending changes
  // with its observers' notice.
  void PublishLocked(ActiveSearch& record, std::vector<v1::SearchEvent> events)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // What candidate n's next probe needs: its scope, ranks and workers. `hosting` answers for
  // the registry as it is now (a pass over the queue shares one).
  std::pair<v1::ProbeScope, ProbeNeeds> NextProbeLocked(const ActiveSearch& record, int64_t n,
                                                        HostingMemo& hosting) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Leases the first queued probe, round-robin between searches, that `worker` (asking at
  // `now`) can host the first node share of, its other shares on other free workers that can
  // host them; returns the worker's assignment, or nullopt when nothing can be placed now.
  std::optional<v1::ProbeAssignment> LeaseNextLocked(const WorkerRegistry::Record& worker,
                                                     absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Leases candidate n to the workers of `shares` (shares[0] hosts rank 0 and is the one
  // asking), counting an attempt; returns shares[0]'s assignment.
  v1::ProbeAssignment LeaseLocked(ActiveSearch& record, int64_t n, v1::ProbeScope scope,
                                  int64_t ranks, const std::vector<RankShare>& shares)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Declares the worker LOST because of `cause` (e.g. "no heartbeat for 6s"); the probe it
  // held is re-queued or failed, after an event that names the worker and the cause.
  void LoseWorkerLocked(int64_t worker_id, const std::string& cause)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The probe of `ended`, a lease that ended without a result, is re-queued or given up
  // with `reason` (ActiveSearch::Retry), after `events`.
  void RetryLeaseLocked(const internal::LeaseState& ended, const std::string& reason,
                        std::vector<v1::SearchEvent> events) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Candidate n's probe was retried for `reason` after `events`: queues it and publishes the
  // re-queue, or, when it was given up (`gave_up`, recorded so), advances the search.
  void RetriedLocked(ActiveSearch& record, int64_t n, const std::string& reason,
                     const std::optional<ActiveSearch::Recorded>& gave_up,
                     std::vector<v1::SearchEvent> events) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Records the final result of candidate n, then advances the search with `events` and the
  // result's: `lease` (the probe that ended, member `member` reporting), ran_on and an
  // EVENT_PROBED.
  void RecordResultLocked(ActiveSearch& record, int64_t n, v1::ProbeResult result,
                          const internal::LeaseState& lease, int member)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Advances the search after `events`, the last of which is the event of a result that was
  // recorded as `recorded` says.
  void AdvanceRecordedLocked(ActiveSearch& record, const ActiveSearch::Recorded& recorded,
                             std::vector<v1::SearchEvent> events)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Lets the search go on after `events` (ActiveSearch::Advance): drops what a spent budget
  // stopped, queues what its policy picked, and publishes `events` with what it did.
  void AdvanceLocked(ActiveSearch& record, std::vector<v1::SearchEvent> events)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Sets Candidate.waiting_reason of every queued candidate from the live fleet, publishing
  // the searches whose reasons changed.
  void UpdateWaitingReasonsLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // RESOURCE_EXHAUSTED when `caller` is at max_searches_per_principal.
  absl::Status CheckSearchLimitLocked(const Caller& caller) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether `record`'s probes must wait because its creator has
  // max_probes_in_flight_per_principal running; `in_flight` caches counts by owner.
  bool AtProbeLimitLocked(const ActiveSearch& record,
                          absl::flat_hash_map<std::string, int64_t>& in_flight) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The ids of the active searches, oldest first.
  std::vector<int64_t> ActiveIdsLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Options options_;
  Clock* const clock_;
  const std::unique_ptr<SearchStore> store_;
  const SearchReader reader_;
  Fleet fleet_{this};

  mutable absl::Mutex mu_;
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;
  // Searches that have not ended, by id, and those that ended in the change under way (they
  // leave at its end). Ended ones live in the store only.
  absl::flat_hash_map<int64_t, ActiveSearch> active_ ABSL_GUARDED_BY(mu_);
  // The searches that ended in the change under way, in the order they ended.
  std::vector<int64_t> ended_ ABSL_GUARDED_BY(mu_);
  ProbeQueue queue_ ABSL_GUARDED_BY(mu_);
  ChangeSet changes_ ABSL_GUARDED_BY(mu_);
  // The workers and their leases; records its changes in changes_.
  Dispatch dispatch_ ABSL_GUARDED_BY(mu_);
  // What the searches that left active_ contributed to Stats().totals, and the summaries
  // of the last of them for Stats().searches.
  SearchTotals ended_totals_ ABSL_GUARDED_BY(mu_);
  EndedSearchSummaries ended_summaries_ ABSL_GUARDED_BY(mu_);

  // Never held together with mu_: listeners are told with no scheduler lock held.
  absl::Mutex listeners_mu_;
  std::vector<ProbesQueuedListener*> listeners_ ABSL_GUARDED_BY(listeners_mu_);
};

}  // namespace paratune

#endif  // PARATUNE_SERVER_CORE_SCHEDULER_H_
