#include "common/grpc_status.h"

#include "gtest/gtest.h"

namespace paratune {
namespace {

TEST(ToGrpcStatusTest, KeepsCodeAndMessage) {
  const grpc::Status status = ToGrpcStatus(absl::InvalidArgumentError("top_k (-1) bad"));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message(), "top_k (-1) bad");
  EXPECT_EQ(ToGrpcStatus(absl::NotFoundError("x")).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(ToGrpcStatus(absl::FailedPreconditionError("x")).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(ToGrpcStatus(absl::UnimplementedError("x")).error_code(),
            grpc::StatusCode::UNIMPLEMENTED);
  EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).ok());
}

TEST(FromGrpcStatusTest, KeepsCodeAndMessage) {
  EXPECT_EQ(FromGrpcStatus(grpc::Status::OK), absl::OkStatus());
  EXPECT_EQ(FromGrpcStatus(grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "not leased")),
            absl::FailedPreconditionError("not leased"));
  EXPECT_EQ(FromGrpcStatus(grpc::Status(grpc::StatusCode::UNAVAILABLE, "down")),
            absl::UnavailableError("down"));
}

}  // namespace
}  // namespace paratune
