// Parked AcquireProbe long polls: each waits until a probe is leased to its worker or its
// deadline passes, without a thread per call and without polling. One thread sleeps on a
// condition variable until the earliest deadline or until probes are queued (Notify).
#ifndef PARATUNE_SERVER_PROBE_WAIT_LIST_H_
#define PARATUNE_SERVER_PROBE_WAIT_LIST_H_

#include <functional>
#include <list>
#include <optional>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "proto/probe.pb.h"

namespace paratune {

// Thread-safe. Deadlines are wall-clock (absl::Now): they bound how long a call stays
// parked, which no test needs to fake; lease timing uses the scheduler's injected clock.
class ProbeWaitList {
 public:
  using AcquireResult = absl::StatusOr<std::optional<v1::ProbeAssignment>>;
  // What one try to lease a probe to a worker gave.
  struct Attempt {
    AcquireResult result;
    // The try re-queued a probe or left work for other workers (gang shares): every parked
    // call must try again. Said here rather than by Notify, which would take the list's lock
    // that the try runs under.
    bool others_may_have_work = false;
  };
  // Leases a probe to the worker if one fits now (Scheduler::TryAcquireProbe). Called with
  // the list's lock held, so it must not call back into the list.
  using TryAcquire = std::function<Attempt(const std::string& worker)>;
  using Done = std::function<void(AcquireResult)>;

  // Starts the waiting thread.
  explicit ProbeWaitList(TryAcquire try_acquire);
  ProbeWaitList(const ProbeWaitList&) = delete;
  ProbeWaitList& operator=(const ProbeWaitList&) = delete;
  // Stop()s.
  ~ProbeWaitList();

  // Calls `done` exactly once, never with the list's lock held: at once (on this thread) when
  // a probe fits now or try_acquire fails; later (on the waiting thread) as soon as a probe
  // is leased after a Notify, with nullopt at `deadline`, or with nullopt at Stop. After
  // Stop, at once with UNAVAILABLE.
  void Wait(std::string worker, absl::Time deadline, Done done);

  // Probes were queued: every parked call tries again, oldest first.
  void Notify();

  // Completes every parked call with nullopt and joins the thread. Idempotent.
  void Stop();

 private:
  struct Waiter {
    std::string worker;
    absl::Time deadline;
    Done done;
  };

  void Run();
  // try_acquire_ for `worker`, noting when parked calls must try again.
  AcquireResult TryLocked(const std::string& worker) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const TryAcquire try_acquire_;
  absl::Mutex mu_;
  absl::CondVar changed_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Set by Notify: parked calls must try again.
  bool probes_queued_ ABSL_GUARDED_BY(mu_) = false;
  // Oldest first.
  std::list<Waiter> waiters_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace paratune

#endif  // PARATUNE_SERVER_PROBE_WAIT_LIST_H_
