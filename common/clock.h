// The source of time and of timed waits, injected so that tests control both: the server's
// leases and timestamps, the worker daemon's backoffs, heartbeats and probe deadlines.
#ifndef PARATUNE_COMMON_CLOCK_H_
#define PARATUNE_COMMON_CLOCK_H_

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

namespace paratune {

// Thread-safe: every method may be called from any thread, and any number of threads may wait
// at once.
class Clock {
 public:
  virtual ~Clock() = default;

  virtual absl::Time Now() = 0;
  // Returns once `duration` has passed on this clock; at once when it is not positive.
  virtual void Sleep(absl::Duration duration) = 0;
  // Returns once `notification` is notified or `timeout` has passed on this clock, whichever
  // comes first; whether it was notified (as absl::Notification's timed wait).
  virtual bool WaitForNotification(const absl::Notification& notification,
                                   absl::Duration timeout) = 0;
};

// The wall clock: absl::Now, absl::SleepFor and absl::Notification's own timed wait. Never
// destroyed.
Clock* RealClock();

}  // namespace paratune

#endif  // PARATUNE_COMMON_CLOCK_H_
