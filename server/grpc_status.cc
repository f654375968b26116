#include "server/grpc_status.h"

#include <string>

namespace paratune {

// The codes are equal value for value: common/grpc_client.cc asserts it at compile time.
grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

}  // namespace paratune
