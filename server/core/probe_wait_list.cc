#include "server/core/probe_wait_list.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/time/clock.h"

namespace paratune {

ProbeWaitList::ProbeWaitList(TryAcquire try_acquire)
    : try_acquire_(std::move(try_acquire)), thread_([this] { Run(); }) {}

ProbeWaitList::~ProbeWaitList() { Stop(); }

void ProbeWaitList::Wait(v1::AcquireProbeRequest request, absl::Time deadline, Done done) {
  bool stopping = false;
  uint64_t generation = 0;
  {
    absl::MutexLock lock(&mu_);
    stopping = stopping_;
    generation = generation_;
  }
  if (stopping) {
    done(absl::UnavailableError("the server is shutting down"));
    return;
  }
  AcquireResult result = try_acquire_(request);
  {
    absl::MutexLock lock(&mu_);
    if (!stopping_ && result.ok() && !result->has_value() && deadline > absl::Now()) {
      // Parked with the generation its try began at: a queueing since then is retried.
      waiters_.push_back(Waiter{std::move(request), deadline, std::move(done), generation});
      changed_.Signal();
      return;
    }
  }
  done(std::move(result));
}

void ProbeWaitList::OnProbesQueued() {
  absl::MutexLock lock(&mu_);
  ++generation_;
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

bool ProbeWaitList::RetryDueLocked() const {
  return std::any_of(waiters_.begin(), waiters_.end(),
                     [&](const Waiter& waiter) { return waiter.tried_at < generation_; });
}

void ProbeWaitList::Run() {
  absl::MutexLock lock(&mu_);
  while (true) {
    absl::Time next_deadline = absl::InfiniteFuture();
    for (const Waiter& waiter : waiters_) next_deadline = std::min(next_deadline, waiter.deadline);
    if (!stopping_ && !RetryDueLocked()) changed_.WaitWithDeadline(&mu_, next_deadline);

    // Try the due waiters with the lock released. Only this thread erases waiters, so the
    // iterators stay valid; Wait may append meanwhile.
    const uint64_t generation = generation_;
    std::vector<std::pair<std::list<Waiter>::iterator, AcquireResult>> tried;
    if (!stopping_) {
      for (auto it = waiters_.begin(); it != waiters_.end(); ++it) {
        if (it->tried_at < generation) tried.emplace_back(it, std::optional<v1::ProbeAssignment>());
      }
      mu_.Unlock();
      for (auto& [it, result] : tried) result = try_acquire_(it->request);
      mu_.Lock();
    }

    std::vector<std::pair<Done, AcquireResult>> ready;
    for (auto& [it, result] : tried) {
      it->tried_at = generation;
      if (!result.ok() || result->has_value()) {
        ready.emplace_back(std::move(it->done), std::move(result));
        waiters_.erase(it);
      }
    }
    const absl::Time now = absl::Now();
    for (auto it = waiters_.begin(); it != waiters_.end();) {
      if (stopping_ || it->deadline <= now) {
        ready.emplace_back(std::move(it->done), std::optional<v1::ProbeAssignment>());
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
