// A plaintext gRPC server of health checking (grpc.health.v1, for Kubernetes probes and load
// balancers) and server reflection, and nothing else: the worker's own server (the worker is
// a gRPC client of the scheduler for everything else), and the scheduler's --health_address,
// for probes that cannot do TLS or present a client certificate, such as the kubelet's gRPC
// probe.
#ifndef PARATUNE_COMMON_HEALTH_SERVER_H_
#define PARATUNE_COMMON_HEALTH_SERVER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/server.h"

namespace paratune {

// Thread-safe. Start() it, read port(), destroy it to stop.
class HealthServer {
 public:
  struct Options {
    // host:port to listen on; port 0 picks a free port (see port()). It serves health and
    // reflection only, which reveal nothing secret, so any interface may be used.
    std::string address = "127.0.0.1:0";
  };

  // Serves with the overall health SERVING. INVALID_ARGUMENT for an empty address;
  // UNAVAILABLE when the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<HealthServer>> Start(const Options& options);

  HealthServer(const HealthServer&) = delete;
  HealthServer& operator=(const HealthServer&) = delete;
  ~HealthServer();

  int port() const { return port_; }

  // Health checks answer NOT_SERVING from now on (the worker is stopping).
  void SetNotServing();

 private:
  HealthServer() = default;

  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

}  // namespace paratune

#endif  // PARATUNE_COMMON_HEALTH_SERVER_H_
