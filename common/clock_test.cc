#include "common/clock.h"

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

TEST(RealClockTest, NowIsTheWallClock) {
  const absl::Time before = absl::Now();
  const absl::Time now = RealClock()->Now();
  EXPECT_LE(before, now);
  EXPECT_LE(now, absl::Now());
}

TEST(RealClockTest, SleepLastsAtLeastItsDuration) {
  const absl::Time start = absl::Now();
  RealClock()->Sleep(absl::Milliseconds(1));
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(1));
}

TEST(RealClockTest, WaitForNotificationSaysWhetherItWasNotified) {
  absl::Notification notification;
  EXPECT_FALSE(RealClock()->WaitForNotification(notification, absl::Milliseconds(1)));
  notification.Notify();
  EXPECT_TRUE(RealClock()->WaitForNotification(notification, absl::InfiniteDuration()));
}

}  // namespace
}  // namespace paratune
