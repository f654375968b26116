#include "server/probe_wait_list.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/time/clock.h"

namespace paratune {

ProbeWaitList::ProbeWaitList(TryAcquire try_acquire)
    : try_acquire_(std::move(try_acquire)), thread_([this] { Run(); }) {}

ProbeWaitList::~ProbeWaitList() { Stop(); }

void ProbeWaitList::Wait(std::string worker, absl::Time deadline, Done done) {
  AcquireResult result;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) {
      result = absl::UnavailableError("the server is shutting down");
    } else {
      // Trying under the lock closes the gap between a miss here and parking: a Notify for
      // a probe queued in between waits for the lock and then finds this call parked.
      result = TryLocked(worker);
      if (result.ok() && !result->has_value() && deadline > absl::Now()) {
        waiters_.push_back(Waiter{std::move(worker), deadline, std::move(done)});
        changed_.Signal();
        return;
      }
    }
  }
  done(std::move(result));
}

ProbeWaitList::AcquireResult ProbeWaitList::TryLocked(const std::string& worker) {
  Attempt attempt = try_acquire_(worker);
  if (attempt.others_may_have_work) {
    probes_queued_ = true;
    changed_.Signal();
  }
  return std::move(attempt.result);
}

void ProbeWaitList::Notify() {
  absl::MutexLock lock(&mu_);
  probes_queued_ = true;
  changed_.Signal();
}

void ProbeWaitList::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
    changed_.Signal();
  }
  thread_.join();
}

void ProbeWaitList::Run() {
  absl::MutexLock lock(&mu_);
  while (true) {
    absl::Time next_deadline = absl::InfiniteFuture();
    for (const Waiter& waiter : waiters_) next_deadline = std::min(next_deadline, waiter.deadline);
    if (!stopping_ && !probes_queued_) changed_.WaitWithDeadline(&mu_, next_deadline);

    std::vector<std::pair<Done, AcquireResult>> ready;
    const bool retry = probes_queued_;
    probes_queued_ = false;
    const absl::Time now = absl::Now();
    for (auto it = waiters_.begin(); it != waiters_.end();) {
      AcquireResult result = std::optional<v1::ProbeAssignment>();
      if (!stopping_ && retry) result = TryLocked(it->worker);
      const bool finished = stopping_ || !result.ok() || result->has_value() || it->deadline <= now;
      if (finished) {
        ready.emplace_back(std::move(it->done), std::move(result));
        it = waiters_.erase(it);
      } else {
        ++it;
      }
    }
    const bool stopping = stopping_;
    if (!ready.empty()) {
      mu_.Unlock();
      for (auto& [done, result] : ready) done(std::move(result));
      mu_.Lock();
    }
    if (stopping) return;
  }
}

}  // namespace paratune
