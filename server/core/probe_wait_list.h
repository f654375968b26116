// Parked AcquireProbe long polls: each waits until a probe is leased to its worker or its
// deadline passes, without a thread per call and without polling. One thread sleeps on a
// condition variable until the earliest deadline or until probes are queued
// (OnProbesQueued), then lets the parked calls try again.
//
// Tries run with the list's lock released, so the scheduler may tell the list about
// queued probes from inside a try's consequences without a lock cycle. A generation counter,
// bumped by every OnProbesQueued, closes the gap between a miss and parking: a call whose try
// began before the latest queueing is tried again.
#ifndef PARATUNE_SERVER_CORE_PROBE_WAIT_LIST_H_
#define PARATUNE_SERVER_CORE_PROBE_WAIT_LIST_H_

#include <cstdint>
#include <functional>
#include <list>
#include <optional>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "proto/probe.pb.h"
#include "proto/worker_service.pb.h"
#include "server/core/probes_queued_listener.h"

namespace paratune {

// Thread-safe. Deadlines are wall-clock (absl::Now): they bound how long a call stays
// parked, which no test needs to fake; lease timing uses the scheduler's injected clock.
class ProbeWaitList : public ProbesQueuedListener {
 public:
  using AcquireResult = absl::StatusOr<std::optional<v1::ProbeAssignment>>;
  // Leases a probe to the asking worker if one fits now (Scheduler::Fleet::TryAcquireProbe).
  // Called without the list's lock, from the thread of Wait or the list's own thread.
  using TryAcquire = std::function<AcquireResult(const v1::AcquireProbeRequest& request)>;
  using Done = std::function<void(AcquireResult)>;

  // Starts the waiting thread.
  explicit ProbeWaitList(TryAcquire try_acquire);
  ProbeWaitList(const ProbeWaitList&) = delete;
  ProbeWaitList& operator=(const ProbeWaitList&) = delete;
  // Stop()s.
  ~ProbeWaitList() override;

  // Calls `done` exactly once, never with the list's lock held: at once (on this thread) when
  // a probe fits now or try_acquire fails; later (on the waiting thread) as soon as a probe
  // is leased after an OnProbesQueued, with nullopt at `deadline`, or with nullopt at Stop.
  // After Stop, at once with UNAVAILABLE.
  void Wait(v1::AcquireProbeRequest request, absl::Time deadline, Done done);

  // Probes were queued: every parked call tries again, oldest first.
  void OnProbesQueued() override;

  // Completes every parked call with nullopt and joins the thread. Idempotent.
  void Stop();

 private:
  struct Waiter {
    v1::AcquireProbeRequest request;
    absl::Time deadline;
    Done done;
    // The generation_ its last try began at; it tries again once generation_ is larger.
    uint64_t tried_at = 0;
  };

  void Run();
  // Whether a parked call must try again.
  bool RetryDueLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const TryAcquire try_acquire_;
  absl::Mutex mu_;
  absl::CondVar changed_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Counts OnProbesQueued calls.
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
  // Oldest first. Only the waiting thread removes waiters, so iterators it holds across a
  // try stay valid.
  std::list<Waiter> waiters_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace paratune

#endif  // PARATUNE_SERVER_CORE_PROBE_WAIT_LIST_H_
