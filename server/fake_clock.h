// A clock that moves only when a test advances it.
#ifndef PARATUNE_SERVER_FAKE_CLOCK_H_
#define PARATUNE_SERVER_FAKE_CLOCK_H_

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/clock.h"

namespace paratune {

// Thread-safe. Starts at a fixed instant so timestamps in tests are reproducible.
class FakeClock : public Clock {
 public:
  FakeClock() : now_(absl::FromUnixSeconds(1'800'000'000)) {}

  absl::Time Now() override {
    absl::MutexLock lock(&mu_);
    return now_;
  }

  void Advance(absl::Duration d) {
    absl::MutexLock lock(&mu_);
    now_ += d;
  }

 private:
  absl::Mutex mu_;
  absl::Time now_ ABSL_GUARDED_BY(mu_);
};

}  // namespace paratune

#endif  // PARATUNE_SERVER_FAKE_CLOCK_H_
