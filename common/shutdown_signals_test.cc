#include "common/shutdown_signals.h"

#include <pthread.h>
#include <time.h>

#include "gtest/gtest.h"

namespace paratune {
namespace {

TEST(BlockShutdownSignalsTest, ASigtermWaitsForSigwaitInsteadOfKillingTheProcess) {
  const sigset_t signals = BlockShutdownSignals();
  EXPECT_EQ(sigismember(&signals, SIGINT), 1);
  EXPECT_EQ(sigismember(&signals, SIGTERM), 1);
  sigset_t blocked;
  pthread_sigmask(SIG_BLOCK, nullptr, &blocked);
  EXPECT_EQ(sigismember(&blocked, SIGTERM), 1);

  // Were SIGTERM not blocked, this would end the test binary.
  ASSERT_EQ(raise(SIGTERM), 0);
  const timespec wait = {5, 0};
  EXPECT_EQ(sigtimedwait(&signals, nullptr, &wait), SIGTERM);
}

}  // namespace
}  // namespace paratune
