#include "worker/health_server.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_builder.h"

namespace paratune {

absl::StatusOr<std::unique_ptr<HealthServer>> HealthServer::Start(const Options& options) {
  if (options.address.empty()) {
    return absl::InvalidArgumentError("address (\"\") must be host:port");
  }
  std::unique_ptr<HealthServer> server(new HealthServer());
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  // Without this, gRPC sets SO_REUSEPORT and a second worker on the same port would share
  // it silently instead of failing.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.AddListeningPort(options.address, grpc::InsecureServerCredentials(), &server->port_);
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || server->port_ == 0) {
    server->server_.reset();
    return absl::UnavailableError(
        absl::StrCat("cannot listen on address (\"", options.address,
                     "\"): the port is taken or the host is not a local interface"));
  }
  return server;
}

HealthServer::~HealthServer() {
  if (server_ == nullptr) return;
  SetNotServing();
  server_->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(1)));
  server_->Wait();
}

void HealthServer::SetNotServing() {
  if (auto* health = server_->GetHealthCheckService(); health != nullptr) {
    health->SetServingStatus(false);
  }
}

}  // namespace paratune
