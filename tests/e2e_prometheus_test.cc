// End to end with a real Prometheus server (Debian's prometheus): it scrapes a real
// paratune-server and a sim paratune-worker on loopback every second during a search, and
// its HTTP query API shows the probe and search counters moving as the search did.
#include <cstdio>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/free_port.h"
#include "gtest/gtest.h"
#include "tests/http_client.h"
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

// A Prometheus server on 127.0.0.1 scraping `targets` every second.
class PrometheusServer {
 public:
  static absl::StatusOr<std::unique_ptr<PrometheusServer>> Start(
      const std::vector<int>& target_ports) {
    absl::StatusOr<std::string> binary = FindProgram("prometheus", "prometheus");
    if (!binary.ok()) return binary.status();
    absl::StatusOr<int> port = PickFreeTcpPort();
    if (!port.ok()) return port.status();
    std::vector<std::string> targets;
    for (int target : target_ports) targets.push_back(absl::StrCat("\"127.0.0.1:", target, "\""));
    const std::string config_path = absl::StrCat(TempDir(), "/prometheus.yml");
    FILE* config = std::fopen(config_path.c_str(), "w");
    if (config == nullptr) return absl::InternalError("cannot write " + config_path);
    std::fprintf(config,
                 "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                 "scrape_configs:\n  - job_name: paratune\n    static_configs:\n"
                 "      - targets: [%s]\n",
                 absl::StrJoin(targets, ", ").c_str());
    std::fclose(config);
    std::unique_ptr<PrometheusServer> server(new PrometheusServer(*port));
    absl::StatusOr<std::unique_ptr<ChildProcess>> process = ChildProcess::Spawn(
        {*binary, absl::StrCat("--config.file=", config_path),
         absl::StrCat("--storage.tsdb.path=", TempDir(), "/tsdb"),
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

}  // namespace
}  // namespace paratune

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (!paratune::SetTestBinaries(argc, argv)) {
    std::fprintf(stderr, "usage: e2e_prometheus_test PARATUNE_SERVER PARATUNE_WORKER\n");
    return 2;
  }
  return RUN_ALL_TESTS();
}
