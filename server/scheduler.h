// The scheduler's core (DESIGN.md §6, §7): creates searches from validated specs, queues
// the selected candidates, leases probes to workers, records their results, re-queues the
// probes of lost workers, and tells observers about every change. The gRPC services are
// thin adapters over it; everything here is testable without gRPC and with a fake clock.
#ifndef PARATUNE_SERVER_SCHEDULER_H_
#define PARATUNE_SERVER_SCHEDULER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
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
#include "server/probe_queue.h"
#include "server/scheduler_stats.h"
#include "server/search_store.h"

namespace paratune {

// Follows one search (WatchSearch). The scheduler calls it with its lock held: an
// implementation must return quickly and must not call back into the Scheduler.
class SearchObserver {
 public:
  virtual ~SearchObserver() = default;
  // `search` is the search after the change, candidates ranked; `event` says what changed,
  // for people. After a call with an ended search (SUCCEEDED, FAILED, CANCELLED) there are
  // no more calls.
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

  Scheduler(Options options, std::unique_ptr<SearchStore> store);
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Autotuner API.

  // Validates and plans the spec, selects candidates by policy and queues them. Returns the
  // search PROBING, or FAILED with the reason when no candidate is memory-safe.
  // INVALID_ARGUMENT naming the field for a bad request; UNIMPLEMENTED for ADAPTIVE;
  // UNAVAILABLE after Shutdown.
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

  // WorkerService API.

  // INVALID_ARGUMENT naming the field for a bad hostname, GPU list, backend or label.
  absl::StatusOr<v1::RegisterWorkerResponse> RegisterWorker(
      const v1::RegisterWorkerRequest& request);
  // Returns the probes the worker must stop: those of cancelled searches, re-leased ones, and
  // any it runs that are not leased to it. NOT_FOUND when the worker is unknown or was
  // declared lost (it must register again).
  absl::StatusOr<v1::HeartbeatResponse> Heartbeat(const v1::HeartbeatRequest& request);
  // Leases the next queued probe the worker can run (it offers the backend and has at least
  // tensor x pipeline x context parallel GPUs), round-robin between searches; nullopt when
  // none fits now. A probe the worker still held is given up (re-queued). NOT_FOUND as
  // Heartbeat.
  absl::StatusOr<std::optional<v1::ProbeAssignment>> TryAcquireProbe(absl::string_view worker);
  // Records a result. INFRA_ERROR re-queues the probe while attempts remain. NOT_FOUND as
  // Heartbeat; FAILED_PRECONDITION when the probe is not leased to the worker (cancelled,
  // re-leased, reported already); INVALID_ARGUMENT for a malformed result.
  absl::Status ReportProbe(const v1::ReportProbeRequest& request);

  // Declares workers silent for missed_heartbeats_until_lost intervals LOST and expires
  // overdue leases, re-queueing their probes (or failing them when attempts are spent).
  // Call periodically.
  void CheckLeases();

  // Tells every observer the scheduler is going away and refuses new searches and watches.
  void Shutdown();

  // Counts for monitoring (searches, probe results, queue, workers), read under the lock.
  SchedulerStats Stats() const;

 private:
  struct SearchRecord {
    int64_t id = 0;
    // Candidates in predicted order: candidates(n) is searches/{id}/candidates/{n}.
    v1::Search search;
    int64_t world_size = 0;
    std::vector<SearchObserver*> observers;
  };
  struct Lease {
    int64_t search_id = 0;
    int64_t candidate = 0;
    int64_t worker_id = 0;
    absl::Time expires;
  };
  struct WorkerRecord {
    int64_t id = 0;
    v1::Worker worker;
    absl::Time last_heartbeat;
    // Probes to name in the next HeartbeatResponse.cancel_probes.
    std::vector<std::string> cancel_probes;
  };

  // The worker called `name`, if registered and not lost.
  absl::StatusOr<WorkerRecord*> FindLiveWorkerLocked(absl::string_view name)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Stores the record's search (ranked) and tells its observers; forgets the record once the
  // search ended, so `record` must not be used after a call that ends it.
  void PublishLocked(SearchRecord& record, const std::string& event)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void StoreWorkerLocked(const WorkerRecord& worker) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Removes the worker's lease (if any) and re-queues or fails its probe with `reason`;
  // returns whether a probe was queued.
  bool ReleaseLeaseLocked(WorkerRecord& worker, const std::string& reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Queues candidate n again when attempts remain, else records PROBE_INFRA_ERROR; returns
  // whether it was queued. May end the search.
  bool RetryOrGiveUpLocked(SearchRecord& record, int64_t n, const std::string& reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Records a final result of candidate n and ends the search when nothing is left to probe.
  void RecordResultLocked(SearchRecord& record, int64_t n, const v1::ProbeResult& result,
                          const std::string& event) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Counts an attempt of candidate n and describes it for `worker`.
  v1::ProbeAssignment MakeAssignmentLocked(SearchRecord& record, int64_t n,
                                           const WorkerRecord& worker)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void NotifyProbesQueued();

  const Options options_;
  Clock* const clock_;
  const std::unique_ptr<SearchStore> store_;

  mutable absl::Mutex mu_;
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;
  // Searches that have not ended, by id. Ended ones live in the store only.
  absl::flat_hash_map<int64_t, SearchRecord> active_ ABSL_GUARDED_BY(mu_);
  // Leases by probe name (searches/{id}/candidates/{n}/probes/{attempt}).
  absl::flat_hash_map<std::string, Lease> leases_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, WorkerRecord> workers_ ABSL_GUARDED_BY(mu_);
  int64_t last_worker_id_ ABSL_GUARDED_BY(mu_) = 0;
  ProbeQueue queue_ ABSL_GUARDED_BY(mu_);
  // What the searches that left active_ contributed to Stats().totals.
  SearchTotals ended_totals_ ABSL_GUARDED_BY(mu_);
};

}  // namespace paratune

#endif  // PARATUNE_SERVER_SCHEDULER_H_
