#include "common/fake_clock.h"

#include <iterator>

namespace paratune {
namespace {

// How often a wait checks its notification, in real time.
constexpr absl::Duration kNotificationPoll = absl::Milliseconds(1);

}  // namespace

FakeClock::FakeClock() : now_(absl::FromUnixSeconds(1'800'000'000)) {}

absl::Time FakeClock::Now() {
  absl::MutexLock lock(&mu_);
  return now_;
}

void FakeClock::Sleep(absl::Duration duration) {
  const absl::Notification never_notified;
  WaitForNotification(never_notified, duration);
}

bool FakeClock::WaitForNotification(const absl::Notification& notification,
                                    absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  const absl::Time deadline = now_ + timeout;
  const auto waiter = deadlines_.insert(deadline);
  auto deadline_reached = [this, deadline] {
    mu_.AssertHeld();
    return now_ >= deadline;
  };
  // Advance wakes the wait through the mutex; a Notify cannot, so each real-time timeout
  // looks at the notification.
  while (!notification.HasBeenNotified() &&
         !mu_.AwaitWithTimeout(absl::Condition(&deadline_reached), kNotificationPoll)) {
  }
  deadlines_.erase(waiter);
  return notification.HasBeenNotified();
}

void FakeClock::Advance(absl::Duration duration) {
  absl::MutexLock lock(&mu_);
  now_ += duration;
}

void FakeClock::BlockUntilWaiters(int count) {
  absl::MutexLock lock(&mu_);
  auto enough_waiting = [this, count] {
    mu_.AssertHeld();
    return std::distance(deadlines_.upper_bound(now_), deadlines_.end()) >= count;
  };
  mu_.Await(absl::Condition(&enough_waiting));
}

}  // namespace paratune
