// Counts and latency of the gRPC calls a server handles, by method and status code
// (paratune_rpcs_total, paratune_rpc_duration_seconds), recorded by a server interceptor so
// that no service has to remember to.
#ifndef PARATUNE_SERVER_RPC_METRICS_H_
#define PARATUNE_SERVER_RPC_METRICS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "grpcpp/support/server_interceptor.h"
#include "metrics/family.h"
#include "metrics/registry.h"

namespace paratune {

// Thread-safe.
class RpcMetrics {
 public:
  // Registers the two families in `registry` (which must outlive this). `methods` are the
  // full names the server serves, e.g. "/paratune.v1.Autotuner/CreateSearch"
  // (server/security/grpc_methods.h); any other
  // name a client sends is labelled "other", which keeps the label set bounded.
  static absl::StatusOr<std::unique_ptr<RpcMetrics>> Create(metrics::Registry& registry,
                                                            std::vector<std::string> methods);

  // For grpc::ServerBuilder::experimental().SetInterceptorCreators. Each call of the
  // server it is installed in is counted once, when its status is sent (or as CANCELLED
  // when the call ends without one). This object must outlive the server.
  std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> NewInterceptorFactory();

  // The method label for a full method name.
  std::string MethodLabel(const char* method) const;
  void Record(const std::string& method_label, const std::string& code, double seconds);
  // Counts a call the token check refused before it reached the server's interceptors
  // (server/security/rpc_authorization.h); its duration is not observed, there being none to speak
  // of.
  void RecordRefused(absl::string_view method, absl::StatusCode code);

 private:
  RpcMetrics(std::vector<std::string> methods, metrics::CounterFamily* calls,
             metrics::HistogramFamily* durations)
      : methods_(std::move(methods)), calls_(calls), durations_(durations) {}

  const std::vector<std::string> methods_;
  metrics::CounterFamily* const calls_;
  metrics::HistogramFamily* const durations_;
};

}  // namespace paratune

#endif  // PARATUNE_SERVER_RPC_METRICS_H_
