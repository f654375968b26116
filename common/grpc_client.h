// The client side of a gRPC call, one way for the CLI, the worker, the tools and the tests:
// how a call's grpc::Status becomes an absl::Status (the server's side is
// server/grpc_status.h), and how a call gets its deadline.
#ifndef PARATUNE_COMMON_GRPC_CLIENT_H_
#define PARATUNE_COMMON_GRPC_CLIENT_H_

#include <memory>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "grpcpp/client_context.h"
#include "grpcpp/support/status.h"

namespace paratune {

// The same code and message as an absl::Status (gRPC's codes are absl's, value for value).
absl::Status FromGrpcStatus(const grpc::Status& status);

// A context for one call that fails DEADLINE_EXCEEDED `timeout` from now.
std::unique_ptr<grpc::ClientContext> ContextWithTimeout(absl::Duration timeout);

}  // namespace paratune

#endif  // PARATUNE_COMMON_GRPC_CLIENT_H_
