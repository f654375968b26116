#include "server/core/page_token.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

TEST(PageTokenTest, RoundTrips) {
  EXPECT_EQ(DecodePageToken(EncodePageToken(17)).value(), 17);
  EXPECT_EQ(DecodePageToken("").value(), 0);
}

TEST(PageTokenTest, RejectsAnythingElse) {
  for (const char* bad : {"garbage", "c2VhcmNoZXMtYmVmb3JlOjA", "!!!", "c2VhcmNoZXMtYmVmb3JlOng"}) {
    const absl::Status status = DecodePageToken(bad).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(status.message(), ::testing::HasSubstr("page_token"));
  }
}

}  // namespace
}  // namespace paratune
