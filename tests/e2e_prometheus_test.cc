// End to end with a real Prometheus server (Debian's prometheus): it scrapes a real
// paratune-server and a sim paratune-worker on loopback every second during a search, with
// deploy/prometheus/alerts.yml loaded. Its HTTP query API shows the probe and search counters
// moving as the search did, and every query of the Grafana dashboard returns data (but the
// Slurm launcher's panels: //tests:e2e_slurm_launcher_test has the Slurm cluster they need).
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/core/test_requests.h"
#include "tests/dashboard_queries.h"
#include "tests/prometheus_server.h"
#include "tests/test_cluster.h"

namespace paratune {
namespace {

using ::testing::IsEmpty;

constexpr absl::Duration kSearchTimeout = absl::Seconds(120);
constexpr int64_t kProbes = 4;

// The dashboard and the alert rules (BUILD passes them).
std::string& DashboardPath() {
  static auto* const path = new std::string();
  return *path;
}
std::string& AlertRulesPath() {
  static auto* const path = new std::string();
  return *path;
}

// Prometheus scraping the cluster's server and workers.
absl::StatusOr<std::unique_ptr<PrometheusServer>> StartPrometheus(const TestCluster& cluster) {
  PrometheusServer::Options options;
  options.alert_rules = AlertRulesPath();
  options.server_port = cluster.metrics_ports().front();
  options.worker_ports.assign(cluster.metrics_ports().begin() + 1, cluster.metrics_ports().end());
  return PrometheusServer::Start(options);
}

TEST(PrometheusTest, ScrapesTheServerAndAWorkerDuringASearch) {
  TestCluster::Options options;
  options.serve_metrics = true;
  absl::StatusOr<std::unique_ptr<TestCluster>> cluster =
      TestCluster::Start({{"--backend=sim", "--sim_gpus=8", "--sim_probe_seconds=0.5"}}, options);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  absl::StatusOr<std::unique_ptr<PrometheusServer>> prometheus = StartPrometheus(**cluster);
  ASSERT_TRUE(prometheus.ok()) << prometheus.status();

  // Both targets are up and the counters are at zero before the search starts.
  absl::StatusOr<PrometheusServer::Answer> up =
      (*prometheus)->WaitForScalar("scalar(count(up == 1))", 2);
  ASSERT_TRUE(up.ok()) << up.status();
  ASSERT_EQ(up->scalar, 2) << up->json;
  absl::StatusOr<PrometheusServer::Answer> before =
      (*prometheus)->Query("scalar(paratune_searches_created_total)");
  ASSERT_TRUE(before.ok());
  EXPECT_EQ(before->scalar, 0) << before->json;

  absl::StatusOr<v1::Search> search =
      (*cluster)->RunSearch(SmallSimSearch(kProbes), kSearchTimeout);
  ASSERT_TRUE(search.ok()) << search.status();
  ASSERT_EQ(search->state(), v1::SUCCEEDED) << search->stop_reason();
  ASSERT_EQ(search->counts().probed(), kProbes);

  struct Expectation {
    std::string promql;
    double value;
  };
  const std::vector<Expectation> expectations = {
      {"scalar(paratune_searches_created_total)", 1},
      {"scalar(paratune_searches_ended_total{state=\"succeeded\"})", 1},
      {"scalar(sum(paratune_probe_results_total{outcome=\"ok\"}))", kProbes},
      {"scalar(sum(paratune_worker_probes_total{outcome=\"ok\"}))", kProbes},
      {"scalar(sum(paratune_worker_probe_duration_seconds_count))", kProbes},
      {"scalar(sum(paratune_rpcs_total{method=\"paratune.v1.WorkerService/ReportProbe\"}))",
       kProbes},
      {"scalar(paratune_searches{state=\"probing\"})", 0},
      // The probing gauge was 1 while the search ran (probes take 0.5 s, scrapes 1 s).
      {"scalar(max_over_time(paratune_searches{state=\"probing\"}[5m]))", 1},
      {"scalar(paratune_candidates_selected_total)", kProbes},
  };
  for (const Expectation& expectation : expectations) {
    absl::StatusOr<PrometheusServer::Answer> answer =
        (*prometheus)->WaitForScalar(expectation.promql, expectation.value);
    ASSERT_TRUE(answer.ok()) << answer.status();
    std::printf("prometheus query %s -> %s\n", expectation.promql.c_str(), answer->json.c_str());
    EXPECT_EQ(answer->scalar, expectation.value) << expectation.promql << ": " << answer->json;
  }
  absl::StatusOr<PrometheusServer::Answer> vector =
      (*prometheus)
          ->Query(
              "sum by (job, instance, outcome) (paratune_worker_probes_total) > 0 or "
              "paratune_probe_results_total");
  ASSERT_TRUE(vector.ok());
  std::printf("prometheus query (vector) -> %s\n", vector->json.c_str());
}

// Every panel of deploy/grafana/paratune-dashboard.json that this test owns (CheckedBy in
// tests/dashboard_queries.h; the Slurm launcher's panels are //tests:e2e_slurm_launcher_test's)
// shows data for a search run by a server and a sim worker: an ADAPTIVE search one probe at
// a time, so that it has a projected time left while it runs; the alert panel once the
// worker is gone.
TEST(PrometheusTest, EveryDashboardQueryReturnsDataDuringASearch) {
  const absl::Time start = absl::Now();
  TestCluster::Options options;
  options.serve_metrics = true;
  // Lost 1.5 s after its last heartbeat, so that ParatuneNoWorkers is pending soon after
  // the worker is killed.
  options.server_flags = {"--heartbeat_interval_seconds=0.5"};
  absl::StatusOr<std::unique_ptr<TestCluster>> cluster =
      TestCluster::Start({{"--backend=sim", "--sim_gpus=8", "--sim_probe_seconds=1"}}, options);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  absl::StatusOr<std::unique_ptr<PrometheusServer>> prometheus = StartPrometheus(**cluster);
  ASSERT_TRUE(prometheus.ok()) << prometheus.status();
  absl::StatusOr<PrometheusServer::Answer> up =
      (*prometheus)->WaitForScalar("scalar(count(up == 1))", 2);
  ASSERT_TRUE(up.ok() && up->scalar == 2) << up.status();

  v1::CreateSearchRequest request = SmallSimSearch(0);
  request.mutable_spec()->set_policy(v1::ADAPTIVE);
  request.mutable_spec()->mutable_adaptive()->set_max_in_flight(1);
  request.mutable_spec()->mutable_budget()->set_max_probes(kProbes);
  absl::StatusOr<v1::Search> search = (*cluster)->RunSearch(request, kSearchTimeout);
  ASSERT_TRUE(search.ok()) << search.status();
  ASSERT_TRUE(search->state() == v1::SUCCEEDED) << search->stop_reason();
  absl::StatusOr<PrometheusServer::Answer> ended =
      (*prometheus)->WaitForScalar("scalar(sum(paratune_searches_ended_total))", 1);
  ASSERT_TRUE(ended.ok() && ended->scalar == 1) << ended.status();

  absl::StatusOr<std::vector<DashboardPanel>> panels =
      ReadDashboardPanels(DashboardPath(), {{"search", search->name()}});
  ASSERT_TRUE(panels.ok()) << panels.status();
  // The alert panel waits for the alert that killing the worker raises.
  int checked = 0;
  std::vector<DashboardPanel> alert_panels;
  for (const DashboardPanel& panel : *panels) {
    if (CheckedBy(panel) != DashboardTest::kPrometheus) continue;
    ++checked;
    if (absl::StrContains(absl::StrJoin(panel.queries, " "), "ALERTS")) {
      alert_panels.push_back(panel);
      continue;
    }
    absl::StatusOr<std::vector<std::string>> empty = QueriesWithoutData(**prometheus, panel, start);
    ASSERT_TRUE(empty.ok()) << panel.title << ": " << empty.status();
    EXPECT_THAT(*empty, IsEmpty()) << "panel \"" << panel.title << "\" shows nothing";
  }
  ASSERT_FALSE(alert_panels.empty());

  // The ended search keeps its best configuration, marked simulated; bucket bounds print
  // as the decimals they are (le="0.15", not 0.15000000000000002).
  for (const std::string& promql : {absl::StrCat("scalar(count(paratune_search_best_info{search=\"",
                                                 search->name(), "\",source=\"simulated\"}))"),
                                    std::string("scalar(count(paratune_worker_probe_duration_"
                                                "seconds_bucket{le=\"0.15\"}) > bool 0)")}) {
    absl::StatusOr<PrometheusServer::Answer> answer = (*prometheus)->WaitForScalar(promql, 1);
    ASSERT_TRUE(answer.ok()) << answer.status();
    EXPECT_EQ(answer->scalar, 1) << promql << ": " << answer->json;
  }

  (*cluster)->KillWorker(0);
  for (const DashboardPanel& panel : alert_panels) {
    absl::StatusOr<std::vector<std::string>> empty = QueriesWithoutData(**prometheus, panel, start);
    ASSERT_TRUE(empty.ok()) << panel.title << ": " << empty.status();
    EXPECT_THAT(*empty, IsEmpty()) << "panel \"" << panel.title << "\" shows nothing";
  }
  std::printf("dashboard: %d of %zu panels checked here in %s\n", checked, panels->size(),
              absl::FormatDuration(absl::Now() - start).c_str());
}

}  // namespace
}  // namespace paratune

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (!paratune::SetTestBinaries(argc, argv) || argc != 5) {
    std::fprintf(stderr,
                 "usage: e2e_prometheus_test PARATUNE_SERVER PARATUNE_WORKER DASHBOARD_JSON "
                 "ALERTS_YML\n");
    return 2;
  }
  paratune::DashboardPath() = argv[3];
  paratune::AlertRulesPath() = argv[4];
  return RUN_ALL_TESTS();
}
