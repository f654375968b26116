#include "common/grpc_server.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/server_builder.h"

namespace paratune {

absl::StatusOr<StartedGrpcServer> StartGrpcServer(GrpcServerOptions options) {
  // Both are process-wide switches read when a builder is made, so before it.
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  StartedGrpcServer started;
  builder.AddListeningPort(options.address, std::move(options.credentials), &started.port);
  for (grpc::Service* service : options.services) builder.RegisterService(service);
  if (options.max_receive_message_bytes > 0) {
    builder.SetMaxReceiveMessageSize(static_cast<int>(options.max_receive_message_bytes));
  }
  if (!options.interceptors.empty()) {
    builder.experimental().SetInterceptorCreators(std::move(options.interceptors));
  }
  started.server = builder.BuildAndStart();
  if (started.server == nullptr || started.port == 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on address (\"", options.address,
                     "\"): the port is taken or the host is not a local interface"));
  }
  return started;
}

}  // namespace paratune
