// End to end with a real Prometheus server (Debian's prometheus): it scrapes a real
// paratune-server and a sim paratune-worker on loopback every second during a search, with
// deploy/prometheus/alerts.yml loaded. Its HTTP query API shows the probe and search counters
// moving as the search did, and every query of the Grafana dashboard returns data.
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/free_port.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "server/core/test_requests.h"
#include "tests/http_client.h"
#include "tests/metrics_text.h"
#include "tests/process_harness.h"
#include "tests/run_command.h"
#include "tests/test_cluster.h"

namespace paratune {
namespace {

constexpr absl::Duration kPrometheusTimeout = absl::Seconds(60);
constexpr absl::Duration kSearchTimeout = absl::Seconds(120);
constexpr int64_t kProbes = 4;

std::string TempDir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir != nullptr ? dir : "/tmp";
}

// The dashboard and the alert rules (BUILD passes them).
std::string& DashboardPath() {
  static auto* const path = new std::string();
  return *path;
}
std::string& AlertRulesPath() {
  static auto* const path = new std::string();
  return *path;
}

absl::StatusOr<google::protobuf::Struct> ParseJson(const std::string& json) {
  google::protobuf::Struct parsed;
  const auto status = google::protobuf::util::JsonStringToMessage(json, &parsed);
  if (!status.ok()) return absl::InvalidArgumentError(std::string(status.message()));
  return parsed;
}

// A Prometheus server on 127.0.0.1 scraping the server (job paratune-server) and the
// workers (job paratune-worker), as deploy/prometheus/prometheus.yml names them, every
// second, with the alert rules loaded and evaluated every second.
class PrometheusServer {
 public:
  static absl::StatusOr<std::unique_ptr<PrometheusServer>> Start(
      const std::vector<int>& target_ports) {
    absl::StatusOr<std::string> binary = FindProgram("prometheus", "prometheus");
    if (!binary.ok()) return binary.status();
    absl::StatusOr<int> port = PickFreeTcpPort();
    if (!port.ok()) return port.status();
    std::vector<std::string> workers;
    for (size_t i = 1; i < target_ports.size(); ++i) {
      workers.push_back(absl::StrCat("\"127.0.0.1:", target_ports[i], "\""));
    }
    // A folder per server, so that no test reads another's samples.
    const std::string dir = absl::StrCat(TempDir(), "/prometheus-", *port);
    std::filesystem::create_directories(dir);
    const std::string config_path = absl::StrCat(dir, "/prometheus.yml");
    FILE* config = std::fopen(config_path.c_str(), "w");
    if (config == nullptr) return absl::InternalError("cannot write " + config_path);
    std::fprintf(config,
                 "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                 "rule_files: [\"%s\"]\n"
                 "scrape_configs:\n"
                 "  - job_name: paratune-server\n"
                 "    static_configs:\n      - targets: [\"127.0.0.1:%d\"]\n"
                 "  - job_name: paratune-worker\n"
                 "    static_configs:\n      - targets: [%s]\n",
                 std::filesystem::absolute(AlertRulesPath()).c_str(), target_ports.front(),
                 absl::StrJoin(workers, ", ").c_str());
    std::fclose(config);
    std::unique_ptr<PrometheusServer> server(new PrometheusServer(*port));
    absl::StatusOr<std::unique_ptr<ChildProcess>> process = ChildProcess::Spawn(
        {*binary, absl::StrCat("--config.file=", config_path),
         absl::StrCat("--storage.tsdb.path=", dir, "/tsdb"),
         absl::StrCat("--web.listen-address=127.0.0.1:", *port), "--log.level=warn"});
    if (!process.ok()) return process.status();
    server->process_ = *std::move(process);
    // Bounded polling of the readiness endpoint: Prometheus has no other signal.
    const absl::Time give_up = absl::Now() + kPrometheusTimeout;
    while (true) {
      absl::StatusOr<HttpResponse> ready = HttpGet(*port, "/-/ready");
      if (ready.ok() && ready->status_code == 200) return server;
      if (std::optional<int> exit = server->process_->Poll(); exit.has_value()) {
        return absl::UnavailableError(
            absl::StrCat("prometheus exited (", DescribeExitStatus(*exit), ")"));
      }
      if (absl::Now() >= give_up) return absl::DeadlineExceededError("prometheus never got ready");
      absl::SleepFor(absl::Milliseconds(100));
    }
  }

  // The API's JSON answer to an instant query, and its value when it is a scalar.
  struct Answer {
    std::string json;
    std::optional<double> scalar;
  };
  absl::StatusOr<Answer> Query(const std::string& promql) {
    absl::StatusOr<HttpResponse> response =
        HttpGet(port_, absl::StrCat("/api/v1/query?query=", UrlEncode(promql)));
    if (!response.ok()) return response.status();
    if (response->status_code != 200) {
      return absl::InternalError(
          absl::StrCat("query ", promql, ": HTTP ", response->status_code, ": ", response->body));
    }
    Answer answer{response->body, std::nullopt};
    static const std::regex* const scalar =
        new std::regex("\"resultType\":\"scalar\",\"result\":\\[[0-9.e+]+,\"([^\"]+)\"\\]");
    std::smatch match;
    double value = 0;
    if (std::regex_search(answer.json, match, *scalar) &&
        absl::SimpleAtod(match[1].str(), &value)) {
      answer.scalar = value;
    }
    return answer;
  }

  // Whether the range query (step 1 s, from `start` to now; what a Grafana panel asks)
  // returns at least one series. Polls for at most kPrometheusTimeout: scrapes and rule
  // evaluation run every second. INTERNAL naming the query when Prometheus refuses it.
  absl::StatusOr<bool> WaitForRangeData(const std::string& promql, absl::Time start) {
    const absl::Time give_up = absl::Now() + kPrometheusTimeout;
    while (true) {
      absl::StatusOr<HttpResponse> response =
          HttpGet(port_, absl::StrCat("/api/v1/query_range?query=", UrlEncode(promql),
                                      "&start=", absl::ToUnixSeconds(start),
                                      "&end=", absl::ToUnixSeconds(absl::Now()), "&step=1"));
      if (!response.ok()) return response.status();
      if (response->status_code != 200) {
        return absl::InternalError(
            absl::StrCat("query ", promql, ": HTTP ", response->status_code, ": ", response->body));
      }
      absl::StatusOr<google::protobuf::Struct> answer = ParseJson(response->body);
      if (!answer.ok()) return answer.status();
      const auto& result =
          answer->fields().at("data").struct_value().fields().at("result").list_value();
      if (result.values_size() > 0) return true;
      if (absl::Now() >= give_up) return false;
      absl::SleepFor(absl::Milliseconds(200));
    }
  }

  // Polls the scalar query until it equals `expected` (at most kPrometheusTimeout: scrapes
  // and rule evaluation run every second). Returns the last answer.
  absl::StatusOr<Answer> WaitForScalar(const std::string& promql, double expected) {
    const absl::Time give_up = absl::Now() + kPrometheusTimeout;
    while (true) {
      absl::StatusOr<Answer> answer = Query(promql);
      if (!answer.ok()) return answer.status();
      if (answer->scalar == expected || absl::Now() >= give_up) return answer;
      absl::SleepFor(absl::Milliseconds(200));
    }
  }

 private:
  explicit PrometheusServer(int port) : port_(port) {}

  const int port_;
  std::unique_ptr<ChildProcess> process_;
};

TEST(PrometheusTest, ScrapesTheServerAndAWorkerDuringASearch) {
  TestCluster::Options options;
  options.serve_metrics = true;
  absl::StatusOr<std::unique_ptr<TestCluster>> cluster =
      TestCluster::Start({{"--backend=sim", "--sim_gpus=8", "--sim_probe_seconds=0.5"}}, options);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  absl::StatusOr<std::unique_ptr<PrometheusServer>> prometheus =
      PrometheusServer::Start((*cluster)->metrics_ports());
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

// A dashboard query as Grafana would send it: the panel's title and its target's
// expression with the dashboard's variables replaced.
struct PanelQuery {
  std::string panel;
  std::string promql;
};

absl::StatusOr<std::vector<PanelQuery>> DashboardQueries(
    const std::map<std::string, std::string>& variables) {
  absl::StatusOr<std::string> text = ReadTextFile(DashboardPath());
  if (!text.ok()) return text.status();
  absl::StatusOr<google::protobuf::Struct> dashboard = ParseJson(*text);
  if (!dashboard.ok()) return dashboard.status();
  std::vector<std::pair<std::string, std::string>> replacements;
  for (const auto& [name, value] : variables) {
    replacements.push_back({absl::StrCat("${", name, "}"), value});
    replacements.push_back({absl::StrCat("$", name), value});
  }
  std::vector<PanelQuery> queries;
  for (const auto& panel : dashboard->fields().at("panels").list_value().values()) {
    const auto& fields = panel.struct_value().fields();
    for (const auto& target : fields.at("targets").list_value().values()) {
      queries.push_back(
          {fields.at("title").string_value(),
           absl::StrReplaceAll(target.struct_value().fields().at("expr").string_value(),
                               replacements)});
    }
  }
  return queries;
}

// Every panel of deploy/grafana/paratune-dashboard.json shows data for a search run by a
// server and a sim worker: an ADAPTIVE search one probe at a time, so that it has a
// projected time left while it runs; the alert panel once the worker is gone. The Slurm
// launcher's panels are left out: their metrics exist only with --launcher=slurm, which
// needs a Slurm cluster (//tests:e2e_slurm_launcher_test).
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
  absl::StatusOr<std::unique_ptr<PrometheusServer>> prometheus =
      PrometheusServer::Start((*cluster)->metrics_ports());
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

  absl::StatusOr<std::vector<PanelQuery>> queries = DashboardQueries({{"search", search->name()}});
  ASSERT_TRUE(queries.ok()) << queries.status();
  // The alert panel's queries wait for the alert that killing the worker raises.
  std::vector<PanelQuery> alert_queries;
  for (const PanelQuery& query : *queries) {
    if (absl::StrContains(query.promql, "paratune_slurm_")) {
      std::printf("panel \"%s\": %s -> not checked (needs --launcher=slurm)\n", query.panel.c_str(),
                  query.promql.c_str());
      continue;
    }
    if (absl::StrContains(query.promql, "ALERTS")) {
      alert_queries.push_back(query);
      continue;
    }
    absl::StatusOr<bool> has_data = (*prometheus)->WaitForRangeData(query.promql, start);
    ASSERT_TRUE(has_data.ok()) << query.panel << ": " << has_data.status();
    std::printf("panel \"%s\": %s -> %s\n", query.panel.c_str(), query.promql.c_str(),
                *has_data ? "data" : "NO DATA");
    EXPECT_TRUE(*has_data) << "panel \"" << query.panel << "\" shows nothing: " << query.promql;
  }
  ASSERT_FALSE(alert_queries.empty());

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
  for (const PanelQuery& query : alert_queries) {
    absl::StatusOr<bool> has_data = (*prometheus)->WaitForRangeData(query.promql, start);
    ASSERT_TRUE(has_data.ok()) << query.panel << ": " << has_data.status();
    std::printf("panel \"%s\": %s -> %s\n", query.panel.c_str(), query.promql.c_str(),
                *has_data ? "data" : "NO DATA");
    EXPECT_TRUE(*has_data) << "panel \"" << query.panel << "\" shows nothing: " << query.promql;
  }
  std::printf("dashboard: %zu queries checked in %s\n", queries->size(),
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
