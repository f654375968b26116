// A clock that moves only when a test advances it, so that tests of timestamps, leases,
// backoffs, heartbeats and deadlines are deterministic and never sleep in real time.
#ifndef PARATUNE_COMMON_FAKE_CLOCK_H_
#define PARATUNE_COMMON_FAKE_CLOCK_H_

#include <set>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "common/clock.h"

namespace paratune {

// Thread-safe. A wait's deadline is the fake time when it began plus its duration; the wait
// ends when Advance reaches that deadline (or, in WaitForNotification, when the notification
// is notified) and never by itself. A typical test lets the code under test start waiting,
// then moves time past the waits it means to end:
//
//   clock.BlockUntilWaiters(1);  // the daemon is backing off
//   clock.Advance(absl::Seconds(1));
class FakeClock : public Clock {
 public:
  // Starts at a fixed instant so that timestamps in tests are reproducible.
  FakeClock();

  absl::Time Now() override;
  void Sleep(absl::Duration duration) override;
  // A notification is seen within about a millisecond of real time: absl::Notification cannot
  // wake this clock, so the wait polls it.
  bool WaitForNotification(const absl::Notification& notification, absl::Duration timeout) override;

  // Moves the time forward by `duration` and ends every wait whose deadline that reaches.
  void Advance(absl::Duration duration);
  // Blocks (in real time, without limit) until at least `count` threads wait in Sleep or
  // WaitForNotification for a deadline still to come. A wait that Advance ended stops
  // counting at once, before its thread runs again, so Advance then BlockUntilWaiters waits
  // for those threads to wait again; a wait whose notification was notified counts until it
  // returns.
  void BlockUntilWaiters(int count);

 private:
  absl::Mutex mu_;
  absl::Time now_ ABSL_GUARDED_BY(mu_);
  // The deadline of each thread in Sleep or WaitForNotification.
  std::multiset<absl::Time> deadlines_ ABSL_GUARDED_BY(mu_);
};

}  // namespace paratune

#endif  // PARATUNE_COMMON_FAKE_CLOCK_H_
