#include "common/grpc_client.h"

#include <chrono>

#include "gtest/gtest.h"

namespace paratune {
namespace {

TEST(GrpcClientTest, TheContextsDeadlineIsTheTimeoutFromNow) {
  const auto before = std::chrono::system_clock::now();
  const std::unique_ptr<grpc::ClientContext> context = ContextWithTimeout(absl::Seconds(30));
  const auto deadline = context->deadline();
  EXPECT_GE(deadline, before + std::chrono::seconds(29));
  EXPECT_LE(deadline, std::chrono::system_clock::now() + std::chrono::seconds(30));
}

}  // namespace
}  // namespace paratune
