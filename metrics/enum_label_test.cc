#include "metrics/enum_label.h"

#include "gtest/gtest.h"

namespace paratune::metrics {
namespace {

TEST(EnumLabelTest, StripsThePrefixAndLowersTheCase) {
  EXPECT_EQ(EnumLabel("PROBE_OUT_OF_MEMORY", "PROBE_"), "out_of_memory");
  EXPECT_EQ(EnumLabel("SUCCEEDED"), "succeeded");
  EXPECT_EQ(EnumLabel("WORKER_IDLE", "PROBE_"), "worker_idle");
}

}  // namespace
}  // namespace paratune::metrics
