// How a client's gRPC call gets its deadline, one way for the CLI, the worker, the tools and
// the tests (a call's status becomes an absl::Status in common/grpc_status.h).
#ifndef PARATUNE_COMMON_GRPC_CLIENT_H_
#define PARATUNE_COMMON_GRPC_CLIENT_H_

#include <memory>

#include "absl/time/time.h"
#include "grpcpp/client_context.h"

namespace paratune {

// A context for one call that fails DEADLINE_EXCEEDED `timeout` from now.
std::unique_ptr<grpc::ClientContext> ContextWithTimeout(absl::Duration timeout);

}  // namespace paratune

#endif  // PARATUNE_COMMON_GRPC_CLIENT_H_
