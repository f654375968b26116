// A binary's /metrics endpoint as its flags describe it (--metrics_address,
// --metrics_port_file): started, logged, its port written. Shared by paratune-server and
// paratune-worker so both behave alike.
#ifndef PARATUNE_METRICS_METRICS_ENDPOINT_H_
#define PARATUNE_METRICS_METRICS_ENDPOINT_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "metrics/http_exporter.h"
#include "metrics/registry.h"

namespace paratune::metrics {

// Serves `registry` on `address` and writes the bound port to `port_file` (when set). nullptr
// when `address` is empty (no endpoint wanted). Errors name --metrics_address or
// --metrics_port_file.
absl::StatusOr<std::unique_ptr<HttpExporter>> StartMetricsEndpoint(const std::string& address,
                                                                   const std::string& port_file,
                                                                   const Registry& registry);

}  // namespace paratune::metrics

#endif  // PARATUNE_METRICS_METRICS_ENDPOINT_H_
