#include "common/clock.h"

#include "absl/time/clock.h"

namespace paratune {
namespace {

class WallClock : public Clock {
 public:
  absl::Time Now() override { return absl::Now(); }
  void Sleep(absl::Duration duration) override { absl::SleepFor(duration); }
  bool WaitForNotification(const absl::Notification& notification,
                           absl::Duration timeout) override {
    return notification.WaitForNotificationWithTimeout(timeout);
  }
};

}  // namespace

Clock* RealClock() {
  static Clock* const clock = new WallClock();
  return clock;
}

}  // namespace paratune
