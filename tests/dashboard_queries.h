// The queries of deploy/grafana/paratune-dashboard.json as Grafana sends them, and which
// end-to-end test shows each panel returning data against a real Prometheus.
#ifndef PARATUNE_TESTS_DASHBOARD_QUERIES_H_
#define PARATUNE_TESTS_DASHBOARD_QUERIES_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tests/prometheus_server.h"

namespace paratune {

// A panel's title and its targets' expressions, the dashboard's variables replaced.
struct DashboardPanel {
  std::string title;
  std::vector<std::string> queries;
};

// Every panel of the dashboard JSON at `path`, `$name` and `${name}` replaced by
// variables[name]. NOT_FOUND when the file cannot be read, INVALID_ARGUMENT when it is not
// JSON.
absl::StatusOr<std::vector<DashboardPanel>> ReadDashboardPanels(
    const std::string& path, const std::map<std::string, std::string>& variables);

// The test that checks a panel. Every panel has exactly one, so that none is left
// unchecked: the Slurm launcher's panels (a query names paratune_slurm_*, exported only with
// --launcher=slurm) need a Slurm cluster, all the others a server and a sim worker.
enum class DashboardTest {
  kPrometheus,     // //tests:e2e_prometheus_test
  kSlurmLauncher,  // //tests:e2e_slurm_launcher_test
};
DashboardTest CheckedBy(const DashboardPanel& panel);

// Range-queries each of the panel's queries from `start` to now, as Grafana would, until it
// returns data or `prometheus`'s timeout passes, printing each query and its outcome.
// Returns the queries that stayed empty; INTERNAL naming the query when Prometheus refuses
// one.
absl::StatusOr<std::vector<std::string>> QueriesWithoutData(PrometheusServer& prometheus,
                                                            const DashboardPanel& panel,
                                                            absl::Time start);

}  // namespace paratune

#endif  // PARATUNE_TESTS_DASHBOARD_QUERIES_H_
