#include "cli/human_time.h"

#include "gtest/gtest.h"

namespace paratune {
namespace {

TEST(ShortDurationTest, TwoUnitsAtMost) {
  EXPECT_EQ(ShortDuration(absl::Milliseconds(300)), "0s");
  EXPECT_EQ(ShortDuration(absl::Seconds(-4)), "0s");
  EXPECT_EQ(ShortDuration(absl::Seconds(45)), "45s");
  EXPECT_EQ(ShortDuration(absl::Seconds(12 * 60 + 59)), "12m");
  EXPECT_EQ(ShortDuration(absl::Hours(3) + absl::Minutes(5) + absl::Seconds(9)), "3h05m");
  EXPECT_EQ(ShortDuration(absl::Hours(52)), "2d04h");
}

TEST(TimeAgoTest, SaysHowLongAgo) {
  const absl::Time now = absl::FromUnixSeconds(1800000000);
  EXPECT_EQ(TimeAgo(now - absl::Milliseconds(200), now), "just now");
  EXPECT_EQ(TimeAgo(now - absl::Minutes(3), now), "3m ago");
  EXPECT_EQ(TimeAgo(now - absl::Hours(26), now), "1d02h ago");
}

}  // namespace
}  // namespace paratune
