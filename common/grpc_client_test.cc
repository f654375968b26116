#include "common/grpc_client.h"

#include <chrono>

#include "gtest/gtest.h"

namespace paratune {
namespace {

TEST(GrpcClientTest, StatusKeepsCodeAndMessage) {
  EXPECT_EQ(FromGrpcStatus(grpc::Status::OK), absl::OkStatus());
  EXPECT_EQ(FromGrpcStatus(grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "not leased")),
            absl::FailedPreconditionError("not leased"));
  EXPECT_EQ(FromGrpcStatus(grpc::Status(grpc::StatusCode::UNAVAILABLE, "down")),
            absl::UnavailableError("down"));
}

TEST(GrpcClientTest, TheContextsDeadlineIsTheTimeoutFromNow) {
  const auto before = std::chrono::system_clock::now();
  const std::unique_ptr<grpc::ClientContext> context = ContextWithTimeout(absl::Seconds(30));
  const auto deadline = context->deadline();
  EXPECT_GE(deadline, before + std::chrono::seconds(29));
  EXPECT_LE(deadline, std::chrono::system_clock::now() + std::chrono::seconds(30));
}

}  // namespace
}  // namespace paratune
