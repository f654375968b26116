// Starting a gRPC server the same way in every paratune binary (STYLE.md rule 6): health
// checking and reflection on, SO_REUSEPORT off so that a second process on a taken port fails
// instead of silently sharing it, and one clear error for an address that cannot be bound.
#ifndef PARATUNE_COMMON_GRPC_SERVER_H_
#define PARATUNE_COMMON_GRPC_SERVER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/support/server_interceptor.h"

namespace paratune {

struct GrpcServerOptions {
  // host:port; port 0 picks a free one.
  std::string address;
  std::shared_ptr<grpc::ServerCredentials> credentials;
  // Not owned; they must outlive the server.
  std::vector<grpc::Service*> services;
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors;
  // Largest message the server receives, bytes; 0 keeps gRPC's default (4 MiB). A larger one
  // is refused with RESOURCE_EXHAUSTED by gRPC itself.
  int64_t max_receive_message_bytes = 0;
};

struct StartedGrpcServer {
  std::unique_ptr<grpc::Server> server;
  int port = 0;
};

// Builds and starts the server. UNAVAILABLE naming the address when it cannot be bound (the
// port is taken, or the host is not a local interface).
absl::StatusOr<StartedGrpcServer> StartGrpcServer(GrpcServerOptions options);

}  // namespace paratune

#endif  // PARATUNE_COMMON_GRPC_SERVER_H_
