#include "common/health_server.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/grpc_server.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/security/server_credentials.h"

namespace paratune {

absl::StatusOr<std::unique_ptr<HealthServer>> HealthServer::Start(const Options& options) {
  if (options.address.empty()) {
    return absl::InvalidArgumentError("address (\"\") must be host:port");
  }
  std::unique_ptr<HealthServer> server(new HealthServer());
  GrpcServerOptions grpc_options;
  grpc_options.address = options.address;
  grpc_options.credentials = grpc::InsecureServerCredentials();
  absl::StatusOr<StartedGrpcServer> started = StartGrpcServer(std::move(grpc_options));
  if (!started.ok()) return started.status();
  server->server_ = std::move(started->server);
  server->port_ = started->port;
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
