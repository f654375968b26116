// The one place where gRPC's and absl's statuses become each other (STYLE.md rule 3): the
// server's handlers answer with ToGrpcStatus, clients (CLI, worker, tools, tests) read a call's
// status with FromGrpcStatus. The codes are equal value for value, asserted in grpc_status.cc.
#ifndef PARATUNE_COMMON_GRPC_STATUS_H_
#define PARATUNE_COMMON_GRPC_STATUS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "grpcpp/server_context.h"
#include "grpcpp/support/server_callback.h"
#include "grpcpp/support/status.h"

namespace paratune {

// Same canonical code and message. Both use the canonical code numbering, so the mapping
// is a cast.
grpc::Status ToGrpcStatus(const absl::Status& status);

// The same code and message as an absl::Status.
absl::Status FromGrpcStatus(const grpc::Status& status);

// Finishes a unary callback RPC with `result`: its value goes into *response when OK.
// Returns the context's default reactor, for the handler to return.
template <typename T>
grpc::ServerUnaryReactor* FinishUnary(grpc::CallbackServerContext* context,
                                      absl::StatusOr<T> result, T* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (result.ok()) *response = *std::move(result);
  reactor->Finish(ToGrpcStatus(result.status()));
  return reactor;
}

}  // namespace paratune

#endif  // PARATUNE_COMMON_GRPC_STATUS_H_
