#include "server/security/listen_address.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

TEST(CheckListenAddressTest, LoopbackIsAlwaysAllowed) {
  for (const char* address :
       {"127.0.0.1:50051", "127.0.0.1:0", "localhost:1", "[::1]:50051", "127.1.2.3:65535"}) {
    EXPECT_TRUE(CheckListenAddress("address", address, false).ok()) << address;
  }
}

TEST(CheckListenAddressTest, RemoteNeedsTlsAndTokensOrExplicitPermission) {
  const absl::Status status = CheckListenAddress("address", "0.0.0.0:50051", false);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), ::testing::HasSubstr("--tls_cert, --tls_key, --token_file"));
  EXPECT_THAT(status.message(), ::testing::HasSubstr("--insecure_allow_remote"));
  EXPECT_TRUE(CheckListenAddress("address", "0.0.0.0:50051", true).ok());
  EXPECT_EQ(CheckListenAddress("address", "[::]:1", false).code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(CheckListenAddressTest, MalformedAddressesNameTheField) {
  for (const char* address :
       {"", "127.0.0.1", "127.0.0.1:", ":50051", "127.0.0.1:65536", "127.0.0.1:http"}) {
    const absl::Status status = CheckListenAddress("address", address, true);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << address;
    EXPECT_THAT(status.message(), ::testing::HasSubstr("address (\"")) << address;
  }
}

TEST(DialAddressTest, TheBoundPortOnTheListeningHostOrThisHostForAWildcard) {
  EXPECT_EQ(DialAddress("127.0.0.1:0", 41234, "node7"), "127.0.0.1:41234");
  EXPECT_EQ(DialAddress("[::1]:50051", 50051, "node7"), "[::1]:50051");
  EXPECT_EQ(DialAddress("0.0.0.0:50051", 50051, "node7"), "node7:50051");
  EXPECT_EQ(DialAddress("[::]:0", 40000, "node7"), "node7:40000");
  EXPECT_EQ(DialAddress("scheduler.example:50051", 50051, "node7"), "scheduler.example:50051");
}

}  // namespace
}  // namespace paratune
