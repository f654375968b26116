#include "estimator/field_checks.h"

#include <limits>

#include "estimator/field_error.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

TEST(FieldChecksTest, IntInRangeAcceptsBoundsAndNamesFieldOutside) {
  EXPECT_TRUE(CheckIntInRange("x.y", 1, 1, 4).ok());
  EXPECT_TRUE(CheckIntInRange("x.y", 4, 1, 4).ok());
  const absl::Status status = CheckIntInRange("training.seq_len", 0, 1, 4194304);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "training.seq_len (0) must be in [1, 4194304]");
  ASSERT_TRUE(FieldFaultOf(status).has_value());
  EXPECT_EQ(FieldFaultOf(status)->field, "training.seq_len");
  EXPECT_FALSE(CheckIntInRange("x.y", 5, 1, 4).ok());
}

TEST(FieldChecksTest, IntPositive) {
  EXPECT_TRUE(CheckIntPositive("config.data_parallel", 1).ok());
  const absl::Status status = CheckIntPositive("config.data_parallel", -2);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "config.data_parallel (-2) must be >= 1");
}

TEST(FieldChecksTest, DoublePositiveRejectsZeroNegativeNanAndInfinity) {
  EXPECT_TRUE(CheckDoublePositive("g", 0.5).ok());
  EXPECT_EQ(CheckDoublePositive("g", 0).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckDoublePositive("g", -1).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckDoublePositive("g", std::numeric_limits<double>::quiet_NaN()).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckDoublePositive("g", std::numeric_limits<double>::infinity()).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckDoublePositive("cluster.gpu.hbm_bandwidth_gbps", -1).message(),
            "cluster.gpu.hbm_bandwidth_gbps (-1) must be a finite number > 0");
}

}  // namespace
}  // namespace paratune
