#include "common/hostname.h"

#include <unistd.h>

#include "gtest/gtest.h"

namespace paratune {
namespace {

TEST(HostnameTest, IsTheSystemsName) {
  char expected[256] = {};
  ASSERT_EQ(gethostname(expected, sizeof(expected) - 1), 0);
  absl::StatusOr<std::string> hostname = LocalHostname();
  ASSERT_TRUE(hostname.ok()) << hostname.status();
  EXPECT_EQ(*hostname, expected);
}

}  // namespace
}  // namespace paratune
