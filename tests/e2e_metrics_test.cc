// End to end: the real binaries' /metrics output passes `promtool check metrics`, counts
// what a search did, and exports every metric the Grafana dashboard and the alert rules
// query.
#include <cstdio>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/http_client.h"
#include "tests/metrics_text.h"
#include "tests/run_command.h"
#include "tests/test_cluster.h"

namespace paratune {
namespace {

constexpr absl::Duration kSearchTimeout = absl::Seconds(120);
constexpr int64_t kProbes = 3;

// Deployment files whose queries must name exported metrics (BUILD passes them).
std::vector<std::string>& DeployFiles() {
  static auto* const files = new std::vector<std::string>();
  return *files;
}

class MetricsTest : public ::testing::Test {
 protected:
  // One server and one worker, both serving /metrics, after a search of kProbes probes.
  static void SetUpTestSuite() {
    TestCluster::Options options;
    options.serve_metrics = true;
    absl::StatusOr<std::unique_ptr<TestCluster>> cluster = TestCluster::Start(
        {{"--backend=sim", "--sim_gpus=8", "--sim_probe_seconds=0.05"}}, options);
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = cluster->release();
    absl::StatusOr<v1::Search> search =
        cluster_->RunSearch(SmallSimSearch(kProbes), kSearchTimeout);
    ASSERT_TRUE(search.ok()) << search.status();
    ASSERT_EQ(search->state(), v1::SUCCEEDED) << search->stop_reason();
    ASSERT_EQ(search->counts().probed(), kProbes);
    // The search ends inside the last ReportProbe, before its RPC is counted (the counter
    // moves when the call completes), and the worker counts the probe once the call has
    // returned: read until both counts are in, for a bounded time.
    const std::string last_report =
        "paratune_rpcs_total{method=\"paratune.v1.WorkerService/ReportProbe\",code=\"OK\"}";
    const std::string last_probe = "paratune_worker_probes_total{backend=\"sim\",outcome=\"ok\"}";
    const absl::Time give_up = absl::Now() + absl::Seconds(10);
    do {
      expositions_->clear();
      for (int port : cluster_->metrics_ports()) {
        absl::StatusOr<HttpResponse> response = HttpGet(port, "/metrics");
        ASSERT_TRUE(response.ok()) << response.status();
        ASSERT_EQ(response->status_code, 200);
        expositions_->push_back(response->body);
      }
    } while ((SampleValue(expositions_->front(), last_report).value_or(0) < kProbes ||
              SampleValue(expositions_->back(), last_probe).value_or(0) < kProbes) &&
             absl::Now() < give_up);
    ASSERT_EQ(expositions_->size(), 2);
  }

  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }

  static const std::string& server_metrics() { return (*expositions_)[0]; }
  static const std::string& worker_metrics() { return (*expositions_)[1]; }

  static TestCluster* cluster_;
  static std::vector<std::string>* expositions_;
};

TestCluster* MetricsTest::cluster_ = nullptr;
std::vector<std::string>* MetricsTest::expositions_ = new std::vector<std::string>();

TEST_F(MetricsTest, PromtoolAcceptsBothBinariesOutput) {
  absl::StatusOr<std::string> promtool = FindProgram("promtool", "prometheus");
  ASSERT_TRUE(promtool.ok()) << promtool.status();
  for (const std::string& exposition : *expositions_) {
    CommandOptions options;
    options.stdin_text = exposition;
    absl::StatusOr<CommandResult> checked = RunCommand({*promtool, "check", "metrics"}, options);
    ASSERT_TRUE(checked.ok()) << checked.status();
    std::printf("promtool check metrics (%zu bytes): exit %s, output: \"%s\"\n", exposition.size(),
                checked->succeeded() ? "0" : "non-zero", checked->output.c_str());
    EXPECT_TRUE(checked->succeeded()) << checked->output << "\nfor:\n" << exposition;
    // Lint problems (naming, units, help) are printed even on success.
    EXPECT_EQ(checked->output, "");
  }
}

TEST_F(MetricsTest, CountersMovedAsTheSearchDid) {
  EXPECT_EQ(*SampleValue(server_metrics(), "paratune_searches_created_total"), 1);
  EXPECT_EQ(*SampleValue(server_metrics(), "paratune_searches_ended_total{state=\"succeeded\"}"),
            1);
  EXPECT_EQ(*SampleValue(server_metrics(),
                         "paratune_probe_results_total{backend=\"sim\",outcome=\"ok\"}"),
            kProbes);
  EXPECT_EQ(*SampleValue(server_metrics(), "paratune_candidates_selected_total"), kProbes);
  EXPECT_EQ(*SampleValue(server_metrics(), "paratune_workers{state=\"idle\"}"), 1);
  EXPECT_EQ(*SampleValue(server_metrics(),
                         "paratune_rpcs_total{method=\"paratune.v1.WorkerService/ReportProbe\","
                         "code=\"OK\"}"),
            kProbes);
  EXPECT_EQ(*SampleValue(worker_metrics(),
                         "paratune_worker_probes_total{backend=\"sim\",outcome=\"ok\"}"),
            kProbes);
  EXPECT_EQ(*SampleValue(worker_metrics(),
                         "paratune_worker_probe_duration_seconds_count{backend=\"sim\","
                         "outcome=\"ok\"}"),
            kProbes);
  EXPECT_GT(
      *SampleValue(worker_metrics(), "paratune_worker_probe_gpu_seconds_total{backend=\"sim\"}"),
      0);
}

TEST_F(MetricsTest, DashboardAndAlertsQueryOnlyExportedMetrics) {
  std::set<std::string> exported = ExposedMetricNames(server_metrics());
  const std::set<std::string> worker = ExposedMetricNames(worker_metrics());
  exported.insert(worker.begin(), worker.end());
  ASSERT_FALSE(DeployFiles().empty());
  for (const std::string& path : DeployFiles()) {
    absl::StatusOr<std::string> text = ReadTextFile(path);
    ASSERT_TRUE(text.ok()) << text.status();
    const std::set<std::string> referenced = ReferencedMetricNames(*text);
    EXPECT_FALSE(referenced.empty()) << path;
    for (const std::string& name : referenced) {
      // The Slurm launcher's metrics exist only with --launcher=slurm;
      // //tests:e2e_slurm_launcher_test checks those.
      if (absl::StartsWith(name, "paratune_slurm_")) continue;
      EXPECT_EQ(exported.count(name), 1)
          << path << " queries " << name << ", which neither binary exports";
    }
  }
}

}  // namespace
}  // namespace paratune

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (!paratune::SetTestBinaries(argc, argv)) {
    std::fprintf(stderr,
                 "usage: e2e_metrics_test PARATUNE_SERVER PARATUNE_WORKER DEPLOY_FILE...\n");
    return 2;
  }
  for (int i = 3; i < argc; ++i) paratune::DeployFiles().push_back(argv[i]);
  return RUN_ALL_TESTS();
}
