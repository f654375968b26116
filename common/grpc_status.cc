#include "common/grpc_status.h"

#include <string>

namespace paratune {
namespace {

// Both directions of the conversion cast one code to the other: they must be equal value for
// value.
template <grpc::StatusCode kGrpc, absl::StatusCode kAbsl>
constexpr bool SameCode() {
  return static_cast<int>(kGrpc) == static_cast<int>(kAbsl);
}
static_assert(SameCode<grpc::OK, absl::StatusCode::kOk>());
static_assert(SameCode<grpc::CANCELLED, absl::StatusCode::kCancelled>());
static_assert(SameCode<grpc::UNKNOWN, absl::StatusCode::kUnknown>());
static_assert(SameCode<grpc::INVALID_ARGUMENT, absl::StatusCode::kInvalidArgument>());
static_assert(SameCode<grpc::DEADLINE_EXCEEDED, absl::StatusCode::kDeadlineExceeded>());
static_assert(SameCode<grpc::NOT_FOUND, absl::StatusCode::kNotFound>());
static_assert(SameCode<grpc::ALREADY_EXISTS, absl::StatusCode::kAlreadyExists>());
static_assert(SameCode<grpc::PERMISSION_DENIED, absl::StatusCode::kPermissionDenied>());
static_assert(SameCode<grpc::RESOURCE_EXHAUSTED, absl::StatusCode::kResourceExhausted>());
static_assert(SameCode<grpc::FAILED_PRECONDITION, absl::StatusCode::kFailedPrecondition>());
static_assert(SameCode<grpc::ABORTED, absl::StatusCode::kAborted>());
static_assert(SameCode<grpc::OUT_OF_RANGE, absl::StatusCode::kOutOfRange>());
static_assert(SameCode<grpc::UNIMPLEMENTED, absl::StatusCode::kUnimplemented>());
static_assert(SameCode<grpc::INTERNAL, absl::StatusCode::kInternal>());
static_assert(SameCode<grpc::UNAVAILABLE, absl::StatusCode::kUnavailable>());
static_assert(SameCode<grpc::DATA_LOSS, absl::StatusCode::kDataLoss>());
static_assert(SameCode<grpc::UNAUTHENTICATED, absl::StatusCode::kUnauthenticated>());

}  // namespace

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

absl::Status FromGrpcStatus(const grpc::Status& status) {
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

}  // namespace paratune
