#include "common/fake_clock.h"

#include <atomic>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

TEST(FakeClockTest, StartsAtAFixedInstantAndMovesOnlyWhenAdvanced) {
  FakeClock clock;
  EXPECT_EQ(clock.Now(), absl::FromUnixSeconds(1'800'000'000));
  clock.Advance(absl::Seconds(5));
  EXPECT_EQ(clock.Now(), absl::FromUnixSeconds(1'800'000'005));
}

TEST(FakeClockTest, NonPositiveWaitsReturnAtOnce) {
  FakeClock clock;
  const absl::Notification never_notified;
  clock.Sleep(absl::ZeroDuration());
  clock.Sleep(absl::Seconds(-1));
  EXPECT_FALSE(clock.WaitForNotification(never_notified, absl::ZeroDuration()));
}

TEST(FakeClockTest, SleepEndsWhenAdvanceReachesItsDeadline) {
  FakeClock clock;
  std::atomic<bool> woke{false};
  std::thread sleeper([&] {
    clock.Sleep(absl::Seconds(10));
    woke = true;
  });
  clock.BlockUntilWaiters(1);
  clock.Advance(absl::Seconds(9));
  // Still one second short of its deadline: it is still waiting.
  clock.BlockUntilWaiters(1);
  EXPECT_FALSE(woke);
  clock.Advance(absl::Seconds(1));
  sleeper.join();
  EXPECT_TRUE(woke);
}

TEST(FakeClockTest, WaitForNotificationIsFalseWhenAdvanceReachesItsDeadline) {
  FakeClock clock;
  const absl::Notification never_notified;
  bool notified = true;
  std::thread waiter(
      [&] { notified = clock.WaitForNotification(never_notified, absl::Minutes(1)); });
  clock.BlockUntilWaiters(1);
  clock.Advance(absl::Minutes(1));
  waiter.join();
  EXPECT_FALSE(notified);
}

TEST(FakeClockTest, WaitForNotificationIsTrueWhenNotifiedWithoutAdvancing) {
  FakeClock clock;
  absl::Notification notification;
  bool notified = false;
  std::thread waiter([&] { notified = clock.WaitForNotification(notification, absl::Hours(1)); });
  clock.BlockUntilWaiters(1);
  notification.Notify();
  waiter.join();
  EXPECT_TRUE(notified);
  EXPECT_EQ(clock.Now(), absl::FromUnixSeconds(1'800'000'000));
}

TEST(FakeClockTest, AdvanceEndsOnlyTheWaitsWhoseDeadlineItReaches) {
  FakeClock clock;
  std::atomic<int> woke{0};
  std::vector<std::thread> sleepers;
  for (int seconds : {1, 2, 3}) {
    sleepers.emplace_back([&clock, &woke, seconds] {
      clock.Sleep(absl::Seconds(seconds));
      ++woke;
    });
  }
  clock.BlockUntilWaiters(3);
  clock.Advance(absl::Seconds(2));
  sleepers[0].join();
  sleepers[1].join();
  EXPECT_EQ(woke, 2);
  clock.Advance(absl::Seconds(1));
  sleepers[2].join();
  EXPECT_EQ(woke, 3);
}

TEST(FakeClockTest, BlockUntilWaitersCountsOnlyWaitsThatHaveNotEnded) {
  // A loop that sleeps twice, as a heartbeat does: once Advance ended the first sleep,
  // BlockUntilWaiters(1) returns only when the loop sleeps again.
  FakeClock clock;
  std::atomic<int> sleeps_done{0};
  std::thread loop([&] {
    for (int i = 0; i < 2; ++i) {
      clock.Sleep(absl::Seconds(1));
      ++sleeps_done;
    }
  });
  clock.BlockUntilWaiters(1);
  clock.Advance(absl::Seconds(1));
  clock.BlockUntilWaiters(1);
  EXPECT_EQ(sleeps_done, 1);
  clock.Advance(absl::Seconds(1));
  loop.join();
  EXPECT_EQ(sleeps_done, 2);
}

}  // namespace
}  // namespace paratune
