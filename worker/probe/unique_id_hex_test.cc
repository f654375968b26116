#include "worker/probe/unique_id_hex.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;

TEST(UniqueIdHexTest, RoundTrip) {
  const std::string bytes("\x00\x01\xfe\xff", 4);
  EXPECT_EQ(EncodeUniqueId(bytes), "0001feff");
  absl::StatusOr<std::string> decoded = DecodeUniqueId("0001FEff", 4);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(*decoded, bytes);
}

TEST(UniqueIdHexTest, WrongLengthOrDigitsNameTheFlag) {
  EXPECT_THAT(DecodeUniqueId("0001", 4).status().message(),
              HasSubstr("--nccl_id has 4 characters; an NCCL unique id is 8 hex digits"));
  EXPECT_THAT(DecodeUniqueId("0001fefz", 4).status().message(), HasSubstr("--nccl_id has 'z'"));
}

}  // namespace
}  // namespace paratune
