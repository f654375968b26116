// A real Prometheus server (Debian's prometheus) for end-to-end tests: it scrapes a
// paratune-server and its workers on loopback every second with deploy/prometheus/alerts.yml
// loaded, and answers instant and range queries through its HTTP API.
#ifndef PARATUNE_TESTS_PROMETHEUS_SERVER_H_
#define PARATUNE_TESTS_PROMETHEUS_SERVER_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tests/process_harness.h"

namespace paratune {

// Thread-compatible. Stops the server when destroyed.
class PrometheusServer {
 public:
  struct Options {
    // The rules file loaded and evaluated every second (deploy/prometheus/alerts.yml).
    std::string alert_rules;
    // Scraped as job paratune-server, as deploy/prometheus/prometheus.yml names it.
    int server_port = 0;
    // Scraped as job paratune-worker; may be empty (probe-as-job workers serve no metrics).
    std::vector<int> worker_ports;
    // How long WaitForScalar and WaitForRangeData poll, and Start waits for readiness.
    absl::Duration timeout = absl::Seconds(60);
  };

  // Starts prometheus on a free port of 127.0.0.1 with its own configuration and storage in
  // a folder of TEST_TMPDIR, and waits until it is ready. NOT_FOUND when prometheus is not
  // installed, UNAVAILABLE when it exits, DEADLINE_EXCEEDED when it is not ready in time.
  static absl::StatusOr<std::unique_ptr<PrometheusServer>> Start(const Options& options);

  // The API's JSON answer to an instant query, and its value when it is a scalar.
  struct Answer {
    std::string json;
    std::optional<double> scalar;
  };
  // INTERNAL naming the query when Prometheus refuses it.
  absl::StatusOr<Answer> Query(const std::string& promql);

  // Polls the scalar query until it equals `expected` or the timeout passes (scrapes and
  // rule evaluation run every second). Returns the last answer.
  absl::StatusOr<Answer> WaitForScalar(const std::string& promql, double expected);

  // Whether the range query (step 1 s, from `start` to now: what a Grafana panel asks)
  // returns at least one series before the timeout passes. INTERNAL naming the query when
  // Prometheus refuses it.
  absl::StatusOr<bool> WaitForRangeData(const std::string& promql, absl::Time start);

 private:
  PrometheusServer(int port, absl::Duration timeout) : port_(port), timeout_(timeout) {}

  const int port_;
  const absl::Duration timeout_;
  std::unique_ptr<ChildProcess> process_;
};

}  // namespace paratune

#endif  // PARATUNE_TESTS_PROMETHEUS_SERVER_H_
