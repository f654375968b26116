// The scheduler's core (DESIGN.md §6, §7): creates searches from validated specs, queues the
// selected candidates, leases probes to workers (alone or in gangs), records their results,
// re-queues the probes of lost workers, keeps everything in a SearchStore so that a restarted
// server resumes where it stopped, and tells observers about every change. The gRPC services
// are thin adapters over it; everything here is testable without gRPC and with a fake clock.
#ifndef PARATUNE_SERVER_SCHEDULER_H_
#define PARATUNE_SERVER_SCHEDULER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "proto/autotuner_service.pb.h"
#include "proto/probe.pb.h"
#include "proto/search.pb.h"
#include "proto/worker_service.pb.h"
#include "server/clock.h"
#include "server/adaptive_policy.h"
#include "server/gang_placement.h"
#include "server/probe_queue.h"
#include "server/scheduler_state.pb.h"
#include "server/scheduler_stats.h"
#include "server/search_budget.h"
#include "server/search_store.h"

namespace paratune {

// A worker registered with this label (e.g. by a Slurm job started for one probe,
// server/slurm_launcher.h) is reserved for the probe the label's value names
// (searches/{id}/candidates/{n}/probes/{attempt}): it is offered that probe only, and while
// such workers are live the probe is placed on them only.
inline constexpr char kProbeReservationLabel[] = "paratune.probe";

// Follows one search (WatchSearch). The scheduler calls it with its lock held: an
// implementation must return quickly and must not call back into the Scheduler.
class SearchObserver {
 public:
  virtual ~SearchObserver() = default;
  // `search` is the search after the change, candidates ranked; `event` says what changed,
  // for people. Called only once the change is stored. After a call with an ended search
  // (SUCCEEDED, FAILED, CANCELLED) there are no more calls.
  virtual void OnSearchChanged(const v1::Search& search, const std::string& event) = 0;
  // The scheduler is shutting down; there are no more calls.
  virtual void OnSchedulerShutdown() = 0;
};

// Thread-safe: every public method may be called from any thread.
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
    // Called without the scheduler's lock after probes were queued, so that waiting
    // AcquireProbe calls can look again. May be empty.
    std::function<void()> on_probes_queued;
  };

  // What Watch starts from.
  struct WatchStart {
    // The search now, candidates ranked.
    v1::Search search;
    // True when the search had already ended: the observer was not registered.
    bool ended = false;
  };

  // A probe waiting for workers or running (PendingProbes).
  struct PendingProbe {
    // searches/{id}/candidates/{n}/probes/{attempt}: the lease it runs as, or, while queued,
    // the lease it will run as; workers reserved for it carry this kProbeReservationLabel.
    std::string probe;
    // Leased rather than queued.
    bool running = false;
    // Running, and at least one of its lease's workers is reserved for it.
    bool on_reserved_workers = false;
    // Queued, and no set of live workers could host it (Candidate.waiting_reason is set).
    bool unplaceable = false;
    std::string backend;
    std::string command_template;
    // Ranks it needs now, in tensor x context parallel groups of group_size that must share
    // a host; the search's cluster has gpus_per_node GPUs per host.
    int64_t ranks = 0;
    int64_t group_size = 0;
    int64_t gpus_per_node = 0;
    // Its wall-clock limit on the workers.
    absl::Duration deadline;
  };

  // What TryAcquireProbe gave.
  struct Acquisition {
    // nullopt when nothing can be placed now.
    std::optional<v1::ProbeAssignment> assignment;
    // A probe was re-queued or gang shares were left for other workers: their parked
    // AcquireProbe calls should look again. (TryAcquireProbe runs under the wait list's lock,
    // so it says so instead of calling on_probes_queued.)
    bool others_may_have_work = false;
  };

  // A scheduler over `store`, resuming what it holds: unfinished searches continue with their
  // queued candidates queued again in order; probes leased before keep their leases, so their
  // workers' reports are accepted (they expire as usual otherwise); known workers get a fresh
  // heartbeat allowance. Errors are the store's.
  static absl::StatusOr<std::unique_ptr<Scheduler>> Create(Options options,
                                                           std::unique_ptr<SearchStore> store);
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Autotuner API. Searches come back with their candidates ranked: probed OK by measured
  // TFLOP/s per GPU, then the rest in predicted order.

  // Validates and plans the spec, selects candidates by policy (TOP_K and EXHAUSTIVE all at
  // once; ADAPTIVE a few at a time, adaptive_policy.h) and queues them. Returns the search
  // PROBING, or FAILED with the reason when no candidate is memory-safe. INVALID_ARGUMENT
  // naming the field for a bad request; UNAVAILABLE after Shutdown; the store's error when
  // the search cannot be stored.
  absl::StatusOr<v1::Search> CreateSearch(const v1::CreateSearchRequest& request);
  // INVALID_ARGUMENT for a malformed name; NOT_FOUND naming it when there is no such search.
  absl::StatusOr<v1::Search> GetSearch(absl::string_view name);
  // Newest first, without candidates. INVALID_ARGUMENT for page_size outside [0, 1000] or a
  // page_token that no response of this server issued.
  absl::StatusOr<v1::ListSearchesResponse> ListSearches(const v1::ListSearchesRequest& request);
  // Drops queued probes, tells workers to stop running ones and ends the search CANCELLED.
  // NOT_FOUND when there is no such search; FAILED_PRECONDITION when it already ended.
  absl::StatusOr<v1::Search> CancelSearch(absl::string_view name);
  // Registers `observer` for the search's changes until it ends, Unwatch or Shutdown.
  // NOT_FOUND / INVALID_ARGUMENT as GetSearch; UNAVAILABLE after Shutdown.
  absl::StatusOr<WatchStart> Watch(absl::string_view name, SearchObserver* observer);
  // Removes `observer`; no call to it is in progress or follows once this returns.
  void Unwatch(absl::string_view name, SearchObserver* observer);
  absl::StatusOr<v1::ListWorkersResponse> ListWorkers();
  // NOT_FOUND / INVALID_ARGUMENT as GetSearch; INVALID_ARGUMENT for page_size outside
  // [0, 1000] or a foreign page_token.
  absl::StatusOr<v1::ListSearchEventsResponse> ListSearchEvents(
      const v1::ListSearchEventsRequest& request);

  // WorkerService API.

  // INVALID_ARGUMENT naming the field for a bad hostname, GPU list, backend or label.
  absl::StatusOr<v1::RegisterWorkerResponse> RegisterWorker(
      const v1::RegisterWorkerRequest& request);
  // Returns the probes the worker must stop: those of cancelled searches, re-leased ones, and
  // any it runs that are not leased to it. NOT_FOUND when the worker is unknown or was
  // declared lost (it must register again).
  absl::StatusOr<v1::HeartbeatResponse> Heartbeat(const v1::HeartbeatRequest& request);
  // Hands over the worker's share of a gang probe leased while it was not asking, if any;
  // else leases the next queued probe that can be placed now, round-robin between searches:
  // on this worker alone when it has the probe's GPUs, else on a gang of it and other free
  // workers that can run it (gang_placement.h); the other members' shares wait for their
  // next call. A probe the worker still held is given up (re-queued). NOT_FOUND as Heartbeat.
  absl::StatusOr<Acquisition> TryAcquireProbe(absl::string_view worker);
  // Records one member's result. The probe ends when every member reported PROBE_OK, or at
  // once when one reports another outcome (the others are told to stop); INFRA_ERROR then
  // re-queues it while attempts remain. OK only once the result is stored. NOT_FOUND as
  // Heartbeat; FAILED_PRECONDITION when the probe is not leased to the worker (cancelled,
  // re-leased, reported already); INVALID_ARGUMENT for a malformed result; the store's error
  // when it cannot be stored (the worker retries).
  absl::Status ReportProbe(const v1::ReportProbeRequest& request);
  // Relays gang[0]'s rendezvous token to the members. NOT_FOUND as Heartbeat;
  // FAILED_PRECONDITION when the probe is not leased to the worker or gang[0] sends a second,
  // different token; INVALID_ARGUMENT when another member sends one or it exceeds 4,096 bytes.
  absl::StatusOr<v1::RendezvousResponse> Rendezvous(const v1::RendezvousRequest& request);

  // Declares workers silent for missed_heartbeats_until_lost intervals LOST, expires overdue
  // leases, re-queueing their probes (or failing them when attempts are spent), and ends
  // searches past their budget's deadline. Call periodically.
  void CheckLeases();

  // Tells every observer the scheduler is going away and refuses new searches and watches.
  void Shutdown();

  // Counts for monitoring (searches, probe results, queue, workers), read under the lock.
  SchedulerStats Stats() const;

  // Launcher API: for a component that starts workers for probes (server/slurm_launcher.h).

  // Every queued and running probe: searches oldest first, candidates in selection order.
  std::vector<PendingProbe> PendingProbes();
  // Says that what was launched for `probe` (PendingProbe::probe) has ended, with `reason`
  // naming it and how it ended. The live workers reserved for the probe are declared LOST
  // (a probe they ran is re-queued or failed); a probe still queued for that attempt, which
  // its launch never started, has the attempt counted: re-queued while attempts remain,
  // else recorded as PROBE_INFRA_ERROR. Nothing happens for a probe of an ended search or
  // one that moved on. INVALID_ARGUMENT for a malformed probe name; the store's error when
  // the changes cannot be stored.
  absl::Status LaunchEnded(absl::string_view probe, const std::string& reason);

 private:
  struct SearchRecord {
    int64_t id = 0;
    // Candidates in selection order: candidates(n) is searches/{id}/candidates/{n}.
    v1::Search search;
    int64_t world_size = 0;
    std::vector<SearchObserver*> observers;
    // ADAPTIVE only: the policy over the plan's memory-safe candidates, and for each
    // candidate n of the search its index among the policy's.
    std::unique_ptr<AdaptivePolicy> adaptive;
    std::vector<size_t> policy_index;
  };
  struct WorkerRecord {
    int64_t id = 0;
    v1::Worker worker;
    absl::Time last_heartbeat;
    // Probes to name in the next HeartbeatResponse.cancel_probes.
    std::vector<std::string> cancel_probes;
  };
  // A change to tell observers once it is stored.
  struct Notice {
    std::vector<SearchObserver*> observers;
    v1::Search search;
    std::string event;
  };

  Scheduler(Options options, std::unique_ptr<SearchStore> store);

  // Rebuilds searches, workers, leases and the queue from the store (Create).
  absl::Status RecoverLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Replans an ADAPTIVE search's spec and replays its stored results into a new policy, so it
  // continues as if the server had not stopped.
  absl::Status RebuildPolicyLocked(SearchRecord& record) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Queues candidate n and remembers to tell parked AcquireProbe calls (TakeQueuedFlag).
  void QueueLocked(const SearchRecord& record, int64_t n) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether probes were queued since the last call.
  bool TakeQueuedFlagLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Adds the policy's pick to the search (a new candidate, or a leader to confirm) and
  // queues it; returns a line for the search's event.
  std::string QueuePickLocked(SearchRecord& record, const AdaptivePolicy::Pick& pick)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // What the search has spent of its budget.
  BudgetUse BudgetUseLocked(const SearchRecord& record) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Skips the search's queued candidates and, at its deadline, stops its running probes.
  void StopProbingLocked(SearchRecord& record, bool stop_running)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The worker called `name`, if registered and not lost.
  absl::StatusOr<WorkerRecord*> FindLiveWorkerLocked(absl::string_view name)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The lease of `probe` and the index of `worker` among its members; FAILED_PRECONDITION
  // when the probe is not leased to the worker.
  absl::StatusOr<std::pair<internal::LeaseState*, int>> FindMembershipLocked(
      absl::string_view probe, const WorkerRecord& worker) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Queues the record's search (and `event`) for storing, and its observers' notice; forgets
  // the record once the search ended, so `record` must not be used after a call that ends it.
  void PublishLocked(SearchRecord& record, const std::string& event)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void StoreWorkerLocked(const WorkerRecord& worker) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void StoreLeaseLocked(const internal::LeaseState& lease) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Stores every change since the last flush in one transaction, then tells observers.
  // On a store error the changes stay pending (the next flush retries them) and the error
  // is returned.
  absl::Status FlushLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Live workers that can run the probe `probe_name` with these settings (those without a
  // probe only, when free_only), except `except_id`, with their GPU counts.
  std::vector<FreeWorker> LiveWorkersLocked(const v1::ProbeSettings& probe,
                                            absl::string_view probe_name, bool free_only,
                                            int64_t except_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether a live worker is reserved for the probe (kProbeReservationLabel).
  bool HasReservedWorkersLocked(absl::string_view probe_name) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The scope a probe of candidate n runs at now and its rank count.
  std::pair<v1::ProbeScope, int64_t> ProbeShapeLocked(const SearchRecord& record, int64_t n)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Leases candidate n to the workers of `shares` (shares[0] hosts rank 0 and is the one
  // asking), counting an attempt; returns shares[0]'s assignment.
  v1::ProbeAssignment LeaseLocked(SearchRecord& record, int64_t n, v1::ProbeScope scope,
                                  int64_t ranks, const std::vector<RankShare>& shares)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Removes the lease of `probe` and frees its members; every member but `reporter_id` is
  // told to stop it. Returns the removed lease.
  internal::LeaseState EndLeaseLocked(const std::string& probe, int64_t reporter_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Ends the lease of the worker's probe (if any) and re-queues or fails the probe with
  // `reason`.
  void ReleaseLeaseLocked(WorkerRecord& worker, const std::string& reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Declares the worker LOST, releasing its lease with `reason`.
  void LoseWorkerLocked(WorkerRecord& worker, const std::string& reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Queues candidate n again when attempts remain, else records PROBE_INFRA_ERROR. May end
  // the search.
  void RetryOrGiveUpLocked(SearchRecord& record, int64_t n, const std::string& reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Records a final result of candidate n, then publishes (ending the search when nothing is
  // left to probe).
  void RecordResultLocked(SearchRecord& record, int64_t n, const v1::ProbeResult& result,
                          const std::string& event) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Decides what the search does after `event`: stops probing when its budget is spent, lets
  // ADAPTIVE queue more probes, ends the search when nothing is queued or running, and
  // publishes.
  void AdvanceLocked(SearchRecord& record, std::string event) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Sets Candidate.waiting_reason of every queued candidate from the live fleet, publishing
  // the searches whose reasons changed.
  void UpdateWaitingReasonsLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void NotifyProbesQueued();

  const Options options_;
  Clock* const clock_;
  const std::unique_ptr<SearchStore> store_;

  mutable absl::Mutex mu_;
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;
  // Searches that have not ended, by id. Ended ones live in the store only.
  absl::flat_hash_map<int64_t, SearchRecord> active_ ABSL_GUARDED_BY(mu_);
  // Leases by probe name (searches/{id}/candidates/{n}/probes/{attempt}).
  absl::flat_hash_map<std::string, internal::LeaseState> leases_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, WorkerRecord> workers_ ABSL_GUARDED_BY(mu_);
  int64_t last_worker_id_ ABSL_GUARDED_BY(mu_) = 0;
  ProbeQueue queue_ ABSL_GUARDED_BY(mu_);
  // Set when probes are queued; the public method then tells parked AcquireProbe calls.
  bool probes_queued_ ABSL_GUARDED_BY(mu_) = false;
  // Changes not yet stored, and what to tell observers once they are.
  StoreBatch pending_ ABSL_GUARDED_BY(mu_);
  std::vector<Notice> notices_ ABSL_GUARDED_BY(mu_);
  // What the searches that left active_ contributed to Stats().totals.
  SearchTotals ended_totals_ ABSL_GUARDED_BY(mu_);
};

}  // namespace paratune

#endif  // PARATUNE_SERVER_SCHEDULER_H_
