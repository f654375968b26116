// The metrics of paratune-server's credentials (DESIGN.md §9, §11): a Collector that reads
// CredentialStats at every scrape and exports the reloads of the token file and of the TLS
// files by result, and the principals in force. docs/operations.md says what each one means.
#ifndef PARATUNE_SERVER_SECURITY_CREDENTIAL_METRICS_H_
#define PARATUNE_SERVER_SECURITY_CREDENTIAL_METRICS_H_

#include <functional>
#include <utility>
#include <vector>

#include "metrics/collector.h"
#include "metrics/metric_family.h"
#include "server/security/server_security.h"

namespace paratune {

// Thread-safe when `stats` is.
class CredentialMetrics final : public metrics::Collector {
 public:
  // `stats` is called once per scrape, e.g. [&server] { return server.credential_stats(); }.
  explicit CredentialMetrics(std::function<CredentialStats()> stats) : stats_(std::move(stats)) {}

  std::vector<metrics::MetricDescriptor> Describe() const override;
  std::vector<metrics::MetricFamily> Collect() const override;

 private:
  const std::function<CredentialStats()> stats_;
};

}  // namespace paratune

#endif  // PARATUNE_SERVER_SECURITY_CREDENTIAL_METRICS_H_
