// End to end with a real single-node Slurm (tests/slurm_cluster.h) and no worker started by
// hand: a paratune-server with --launcher=slurm submits every probe as its own Slurm job,
// whose paratune-worker (sim backend) runs that probe and exits, ending the job; cancelling
// a search ends its jobs; a search whose jobs sbatch refuses fails fast. Nothing is left in
// Slurm or in the process table afterwards.
// Needs root; tagged slurm (see tests/BUILD.bazel).
#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/client_credentials.h"
#include "common/free_port.h"
#include "common/test_certificates.h"
#include "common/test_file.h"
#include "gmock/gmock.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "tests/dashboard_queries.h"
#include "tests/http_client.h"
#include "tests/metrics_text.h"
#include "tests/process_harness.h"
#include "tests/prometheus_server.h"
#include "tests/run_command.h"
#include "tests/slurm_cluster.h"
#include "tests/test_cluster.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;

constexpr absl::Duration kSearchTimeout = absl::Seconds(120);
constexpr absl::Duration kWaitTimeout = absl::Seconds(60);
constexpr absl::Duration kPollInterval = absl::Milliseconds(200);
constexpr int64_t kProbes = 3;

std::string& ServerBinary() {
  static auto* const path = new std::string();
  return *path;
}

std::string& WorkerBinary() {
  static auto* const path = new std::string();
  return *path;
}

std::string& AlertRules() {
  static auto* const path = new std::string();
  return *path;
}
std::string& Dashboard() {
  static auto* const path = new std::string();
  return *path;
}

absl::Duration Since(absl::Time start) {
  return absl::Trunc(absl::Now() - start, absl::Milliseconds(10));
}

// The server flags of the probe-as-job mode: sim workers with 8 GPUs each and
// `more_worker_args`, probes that take `probe_seconds`, jobs named PREFIX-..., their output in
// the cluster's folder.
std::vector<std::string> LauncherFlags(const SlurmCluster& slurm, const std::string& prefix,
                                       double probe_seconds,
                                       const std::string& more_worker_args = "") {
  return {"--launcher=slurm",
          // The test cluster has no GPU GRES; sim workers need none.
          "--slurm_request_gpus=false", absl::StrCat("--slurm_worker_binary=", WorkerBinary()),
          absl::StrCat("--slurm_worker_args=--sim_gpus=8 --sim_probe_seconds=", probe_seconds, " ",
                       more_worker_args),
          absl::StrCat("--slurm_job_name_prefix=", prefix),
          absl::StrCat("--slurm_job_output=", slurm.dir(), "/%x-%j.out"),
          "--slurm_poll_interval_seconds=0.5"};
}

// The jobs squeue lists: id -> "name state".
std::map<int64_t, std::string> ListedJobs(SlurmCluster& slurm) {
  std::map<int64_t, std::string> jobs;
  absl::StatusOr<CommandResult> listed = slurm.Run({"squeue", "-h", "-o", "%i %j %T"});
  if (!listed.ok() || !listed->succeeded()) return jobs;
  for (absl::string_view line : absl::StrSplit(listed->output, '\n', absl::SkipEmpty())) {
    std::pair<absl::string_view, absl::string_view> id_rest =
        absl::StrSplit(line, absl::MaxSplits(' ', 1));
    int64_t id = 0;
    if (absl::SimpleAtoi(id_rest.first, &id)) jobs[id] = std::string(id_rest.second);
  }
  return jobs;
}

absl::Status WaitUntilSlurmHasNoJobs(SlurmCluster& slurm) {
  const absl::Time give_up = absl::Now() + kWaitTimeout;
  while (true) {
    const std::map<int64_t, std::string> jobs = ListedJobs(slurm);
    if (jobs.empty()) return absl::OkStatus();
    if (absl::Now() >= give_up) {
      return absl::DeadlineExceededError(absl::StrCat(jobs.size(), " jobs still in squeue after ",
                                                      absl::FormatDuration(kWaitTimeout), ", e.g. ",
                                                      jobs.begin()->second));
    }
    absl::SleepFor(kPollInterval);
  }
}

// Pids of the processes running the paratune-worker binary.
std::vector<int> WorkerProcesses() {
  std::error_code error;
  const std::filesystem::path worker = std::filesystem::canonical(WorkerBinary(), error);
  std::vector<int> pids;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return pids;
  while (dirent* entry = readdir(proc)) {
    int pid = 0;
    if (!absl::SimpleAtoi(entry->d_name, &pid)) continue;
    const std::filesystem::path exe =
        std::filesystem::read_symlink(absl::StrCat("/proc/", pid, "/exe"), error);
    if (!error && exe == worker) pids.push_back(pid);
  }
  closedir(proc);
  return pids;
}

absl::StatusOr<std::string> ServerMetrics(TestCluster& cluster) {
  absl::StatusOr<HttpResponse> response = HttpGet(cluster.metrics_ports().at(0), "/metrics");
  if (!response.ok()) return response.status();
  return response->body;
}

// Scrapes the server until `sample` has `value` (the launcher sees a job end at its next
// round); the last exposition either way.
std::string ServerMetricsOnce(TestCluster& cluster, const std::string& sample, double value) {
  const absl::Time give_up = absl::Now() + kWaitTimeout;
  std::string exposition;
  while (absl::Now() < give_up) {
    absl::StatusOr<std::string> scraped = ServerMetrics(cluster);
    if (scraped.ok()) exposition = *scraped;
    absl::StatusOr<double> found = SampleValue(exposition, sample);
    if (found.ok() && *found == value) break;
    absl::SleepFor(kPollInterval);
  }
  return exposition;
}

absl::StatusOr<v1::Search> GetSearch(v1::Autotuner::Stub& autotuner, const std::string& name) {
  v1::GetSearchRequest request;
  request.set_name(name);
  v1::Search search;
  const grpc::Status status =
      autotuner.GetSearch(ContextWithTimeout(absl::Seconds(10)).get(), request, &search);
  if (!status.ok()) return absl::UnavailableError(status.error_message());
  return search;
}

// Polls the search until `done` holds for it (at most kWaitTimeout); the last answer.
absl::StatusOr<v1::Search> WaitForSearch(v1::Autotuner::Stub& autotuner, const std::string& name,
                                         const std::function<bool(const v1::Search&)>& done) {
  const absl::Time give_up = absl::Now() + kWaitTimeout;
  absl::StatusOr<v1::Search> search = GetSearch(autotuner, name);
  while (absl::Now() < give_up && (!search.ok() || !done(*search))) {
    absl::SleepFor(kPollInterval);
    search = GetSearch(autotuner, name);
  }
  return search;
}

bool HasRunningCandidate(const v1::Search& search) {
  return std::any_of(search.candidates().begin(), search.candidates().end(),
                     [](const v1::Candidate& c) { return c.state() == v1::CANDIDATE_RUNNING; });
}

class SlurmLauncherTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const absl::Time start = absl::Now();
    absl::StatusOr<std::unique_ptr<SlurmCluster>> slurm = SlurmCluster::Start();
    if (!slurm.ok()) {
      *slurm_error_ = slurm.status().ToString();
      return;
    }
    slurm_ = slurm->release();
    std::printf("slurm: single-node cluster idle after %s (%s)\n",
                absl::FormatDuration(Since(start)).c_str(), slurm_->dir().c_str());
  }
  static void TearDownTestSuite() {
    delete slurm_;
    slurm_ = nullptr;
    // The cluster's teardown kills anything of its jobs left over; nothing should have been.
    std::printf("slurm: worker processes after teardown: %zu\n", WorkerProcesses().size());
  }

  void SetUp() override { ASSERT_NE(slurm_, nullptr) << *slurm_error_; }

  static SlurmCluster* slurm_;
  static std::string* slurm_error_;
};

SlurmCluster* SlurmLauncherTest::slurm_ = nullptr;
std::string* SlurmLauncherTest::slurm_error_ = new std::string();

TEST_F(SlurmLauncherTest, EveryProbeRunsInItsOwnJobAndTheJobsEndWithTheirProbes) {
  const absl::Time start = absl::Now();
  TestCluster::Options options;
  options.serve_metrics = true;
  options.server_flags = LauncherFlags(*slurm_, "e2e", /*probe_seconds=*/0.05);
  absl::StatusOr<std::unique_ptr<TestCluster>> cluster = TestCluster::Start({}, options);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  // Scraping the server through the search, for the dashboard's Slurm panels. The jobs'
  // workers serve no metrics.
  PrometheusServer::Options scraping;
  scraping.alert_rules = AlertRules();
  scraping.server_port = (*cluster)->metrics_ports().at(0);
  absl::StatusOr<std::unique_ptr<PrometheusServer>> prometheus = PrometheusServer::Start(scraping);
  ASSERT_TRUE(prometheus.ok()) << prometheus.status();
  absl::StatusOr<PrometheusServer::Answer> up =
      (*prometheus)->WaitForScalar("scalar(count(up == 1))", 1);
  ASSERT_TRUE(up.ok() && up->scalar == 1) << up.status();

  absl::StatusOr<v1::Search> search =
      (*cluster)->RunSearch(SmallSimSearch(kProbes), kSearchTimeout);
  ASSERT_TRUE(search.ok()) << search.status();
  std::printf("slurm: %s %s after %s: %s\n", search->name().c_str(),
              v1::SearchState_Name(search->state()).c_str(),
              absl::FormatDuration(Since(start)).c_str(), search->stop_reason().c_str());
  EXPECT_EQ(search->state(), v1::SUCCEEDED) << search->stop_reason();
  EXPECT_EQ(search->counts().succeeded(), kProbes);

  // Each probe ran on a worker of its own, which a job started for it.
  std::set<std::string> probe_workers;
  for (const v1::Candidate& candidate : search->candidates()) {
    ASSERT_EQ(candidate.probe_result().ran_on_size(), 1) << candidate.name();
    EXPECT_EQ(candidate.probe_result().ran_on(0).worker(), candidate.worker());
    probe_workers.insert(candidate.worker());
  }
  EXPECT_EQ(probe_workers.size(), static_cast<size_t>(kProbes));

  // The jobs end by themselves, their workers having exited after their probe.
  ASSERT_TRUE(WaitUntilSlurmHasNoJobs(*slurm_).ok());
  std::printf("slurm: no job left in squeue after %s\n",
              absl::FormatDuration(Since(start)).c_str());
  std::set<int64_t> jobs;
  for (const v1::Candidate& candidate : search->candidates()) {
    const std::string n = candidate.name().substr(candidate.name().rfind('/') + 1);
    // --slurm_job_output names it after the job's name (%x) and id (%j).
    const std::string prefix = absl::StrCat("e2e-s1-c", n, "-a1-");
    std::string output_path;
    int64_t job = 0;
    for (const auto& entry : std::filesystem::directory_iterator(slurm_->dir())) {
      const std::string file = entry.path().filename().string();
      if (absl::StartsWith(file, prefix) && absl::EndsWith(file, ".out") &&
          absl::SimpleAtoi(file.substr(prefix.size(), file.size() - prefix.size() - 4), &job)) {
        output_path = entry.path().string();
      }
    }
    ASSERT_FALSE(output_path.empty()) << "no job output " << prefix << "*.out";
    jobs.insert(job);
    EXPECT_EQ(slurm_->JobState(job).value_or("?"), "COMPLETED") << job;
    absl::StatusOr<std::string> output = ReadTextFile(output_path);
    ASSERT_TRUE(output.ok()) << output.status();
    EXPECT_THAT(*output, HasSubstr("msg=\"probe reported\""));
    EXPECT_THAT(*output, HasSubstr("reason=\"--exit_after_probes reached\""));
    std::printf("slurm: %s ran on %s in job %lld\n", candidate.name().c_str(),
                candidate.worker().c_str(), static_cast<long long>(job));
  }
  EXPECT_EQ(jobs.size(), static_cast<size_t>(kProbes));
  // Each job's worker deregistered on its way out: no row is left behind as LOST.
  v1::ListWorkersResponse workers;
  ASSERT_TRUE((*cluster)
                  ->autotuner()
                  .ListWorkers(ContextWithTimeout(absl::Seconds(10)).get(),
                               v1::ListWorkersRequest(), &workers)
                  .ok());
  EXPECT_EQ(workers.workers_size(), 0);
  EXPECT_THAT(WorkerProcesses(), ::testing::IsEmpty());

  const std::string metrics =
      ServerMetricsOnce(**cluster, "paratune_slurm_jobs_ended_total{state=\"completed\"}", kProbes);
  EXPECT_EQ(SampleValue(metrics, "paratune_slurm_jobs_submitted_total").value_or(-1), kProbes);
  EXPECT_EQ(
      SampleValue(metrics, "paratune_slurm_jobs_ended_total{state=\"completed\"}").value_or(-1),
      kProbes);
  EXPECT_EQ(SampleValue(metrics, "paratune_slurm_jobs{state=\"running\"}").value_or(-1), 0);
  // The Slurm metrics of the alert rules (tests/e2e_metrics_test.cc checks the others).
  absl::StatusOr<std::string> rules = ReadTextFile(AlertRules());
  ASSERT_TRUE(rules.ok()) << rules.status();
  const std::set<std::string> exported = ExposedMetricNames(metrics);
  int slurm_metrics = 0;
  for (const std::string& name : ReferencedMetricNames(*rules)) {
    if (!absl::StartsWith(name, "paratune_slurm_")) continue;
    ++slurm_metrics;
    EXPECT_EQ(exported.count(name), 1u) << AlertRules() << " queries " << name << ", not exported";
  }
  EXPECT_GT(slurm_metrics, 0) << AlertRules();
  // The dashboard's panels that this test owns (CheckedBy in tests/dashboard_queries.h;
  // //tests:e2e_prometheus_test checks the others) show data for this search.
  absl::StatusOr<std::vector<DashboardPanel>> panels =
      ReadDashboardPanels(Dashboard(), {{"search", search->name()}});
  ASSERT_TRUE(panels.ok()) << panels.status();
  int slurm_panels = 0;
  for (const DashboardPanel& panel : *panels) {
    if (CheckedBy(panel) != DashboardTest::kSlurmLauncher) continue;
    ++slurm_panels;
    absl::StatusOr<std::vector<std::string>> empty = QueriesWithoutData(**prometheus, panel, start);
    ASSERT_TRUE(empty.ok()) << panel.title << ": " << empty.status();
    EXPECT_THAT(*empty, ::testing::IsEmpty()) << "panel \"" << panel.title << "\" shows nothing";
  }
  EXPECT_GT(slurm_panels, 0) << Dashboard();
  absl::StatusOr<std::string> promtool = FindProgram("promtool", "prometheus");
  ASSERT_TRUE(promtool.ok()) << promtool.status();
  CommandOptions check;
  check.stdin_text = metrics;
  absl::StatusOr<CommandResult> checked = RunCommand({*promtool, "check", "metrics"}, check);
  ASSERT_TRUE(checked.ok()) << checked.status();
  EXPECT_TRUE(checked->succeeded()) << checked->output;
  EXPECT_EQ(checked->output, "");
  std::printf("slurm: the probe-as-job search took %s\n",
              absl::FormatDuration(Since(start)).c_str());
}

TEST_F(SlurmLauncherTest, CancellingASearchEndsItsJobs) {
  const absl::Time start = absl::Now();
  TestCluster::Options options;
  // Probes that would outlast the test: the job's worker only ends because of the cancel.
  options.server_flags = LauncherFlags(*slurm_, "e2e-cancel", /*probe_seconds=*/600);
  absl::StatusOr<std::unique_ptr<TestCluster>> cluster = TestCluster::Start({}, options);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  v1::Search created;
  ASSERT_TRUE((*cluster)
                  ->autotuner()
                  .CreateSearch(ContextWithTimeout(absl::Seconds(30)).get(),
                                SmallSimSearch(kProbes), &created)
                  .ok());

  // Until a job's worker runs a probe; the other jobs wait (the jobs take whole nodes).
  absl::StatusOr<v1::Search> search =
      WaitForSearch((*cluster)->autotuner(), created.name(), HasRunningCandidate);
  ASSERT_TRUE(search.ok()) << search.status();
  ASSERT_TRUE(HasRunningCandidate(*search));
  const std::map<int64_t, std::string> jobs = ListedJobs(*slurm_);
  for (const auto& [id, job] : jobs) {
    std::printf("slurm: job %lld %s\n", static_cast<long long>(id), job.c_str());
  }
  ASSERT_EQ(jobs.size(), static_cast<size_t>(kProbes));

  const absl::Time cancel_time = absl::Now();
  v1::CancelSearchRequest cancel;
  cancel.set_name(created.name());
  v1::Search cancelled;
  ASSERT_TRUE((*cluster)
                  ->autotuner()
                  .CancelSearch(ContextWithTimeout(absl::Seconds(10)).get(), cancel, &cancelled)
                  .ok());
  ASSERT_TRUE(WaitUntilSlurmHasNoJobs(*slurm_).ok());
  std::printf("slurm: no job left %s after the cancel (%s into the test)\n",
              absl::FormatDuration(Since(cancel_time)).c_str(),
              absl::FormatDuration(Since(start)).c_str());
  int completed = 0, cancelled_jobs = 0;
  for (const auto& [id, job] : jobs) {
    const std::string state = slurm_->JobState(id).value_or("?");
    std::printf("slurm: job %lld ended %s\n", static_cast<long long>(id), state.c_str());
    // The running job's worker stopped its probe when told and left; the others were
    // cancelled before they started.
    if (absl::StrContains(job, "RUNNING")) {
      EXPECT_EQ(state, "COMPLETED") << id;
      ++completed;
    } else {
      EXPECT_EQ(state, "CANCELLED") << id;
      ++cancelled_jobs;
    }
  }
  EXPECT_EQ(completed, 1);
  EXPECT_EQ(cancelled_jobs, kProbes - 1);
  EXPECT_THAT(WorkerProcesses(), ::testing::IsEmpty());
}

// Jobs that sbatch refuses, each the same way (a GRES this cluster does not have), stop their
// search FAILED with sbatch's message after ProbeSettings.max_launch_failures refusals, long
// before the probe's attempts would have run out.
TEST_F(SlurmLauncherTest, SearchWhoseJobsSbatchRefusesFailsAfterMaxLaunchFailures) {
  const absl::Time start = absl::Now();
  constexpr int64_t kMaxLaunchFailures = 3;
  TestCluster::Options options;
  options.serve_metrics = true;
  options.server_flags = LauncherFlags(*slurm_, "e2e-refused", /*probe_seconds=*/0.05);
  options.server_flags.push_back("--slurm_sbatch_args=--gres=gpu:1");
  absl::StatusOr<std::unique_ptr<TestCluster>> cluster = TestCluster::Start({}, options);
  ASSERT_TRUE(cluster.ok()) << cluster.status();

  v1::CreateSearchRequest request = SmallSimSearch(1);
  v1::ProbeSettings& probe = *request.mutable_spec()->mutable_probe();
  probe.set_max_attempts(10);
  probe.set_max_launch_failures(kMaxLaunchFailures);
  absl::StatusOr<v1::Search> search = (*cluster)->RunSearch(request, kWaitTimeout);
  ASSERT_TRUE(search.ok()) << search.status();
  std::printf("slurm: %s %s after %s: %s\n", search->name().c_str(),
              v1::SearchState_Name(search->state()).c_str(),
              absl::FormatDuration(Since(start)).c_str(), search->stop_reason().c_str());
  EXPECT_EQ(search->state(), v1::FAILED);
  // sbatch's message as it printed it.
  EXPECT_THAT(search->stop_reason(),
              HasSubstr("sbatch: error: Invalid generic resource (gres) specification"));

  // Each refusal was one sbatch call: no job reached Slurm, and none was tried after the last.
  const std::string metrics = ServerMetricsOnce(**cluster, "paratune_slurm_submit_failures_total",
                                                static_cast<double>(kMaxLaunchFailures));
  EXPECT_EQ(SampleValue(metrics, "paratune_slurm_submit_failures_total").value_or(-1),
            kMaxLaunchFailures);
  EXPECT_EQ(SampleValue(metrics, "paratune_slurm_jobs_submitted_total").value_or(-1), 0);
  EXPECT_THAT(ListedJobs(*slurm_), ::testing::IsEmpty());
  EXPECT_THAT(WorkerProcesses(), ::testing::IsEmpty());
}

// A server with TLS, client certificates and tokens: the jobs' workers reach it with the
// credential files --slurm_worker_args names.
TEST_F(SlurmLauncherTest, JobWorkersReachASecuredServerWithTheirCredentialFiles) {
  const absl::StatusOr<TestCertificates>& certificates = SharedTestCertificates();
  ASSERT_TRUE(certificates.ok()) << certificates.status();
  const std::string tokens = WriteTestFile(
      "tokens", "client alice slurm-e2e-client-token\nworker pool slurm-e2e-worker-token\n");
  const std::string worker_token = WriteTestFile("worker.token", "slurm-e2e-worker-token\n");
  const std::string client_token = WriteTestFile("client.token", "slurm-e2e-client-token\n");

  TestCluster::Options options;
  options.server_flags = LauncherFlags(
      *slurm_, "e2e-tls", /*probe_seconds=*/0.05,
      absl::StrCat("--tls_ca=", certificates->ca_cert, " --tls_cert=", certificates->client_cert,
                   " --tls_key=", certificates->client_key, " --token_file=", worker_token));
  for (const std::string& flag : {absl::StrCat("--tls_cert=", certificates->server_cert),
                                  absl::StrCat("--tls_key=", certificates->server_key),
                                  absl::StrCat("--tls_client_ca=", certificates->ca_cert),
                                  absl::StrCat("--token_file=", tokens)}) {
    options.server_flags.push_back(flag);
  }
  ClientCredentialsOptions client;
  client.tls_ca = certificates->ca_cert;
  client.tls_cert = certificates->client_cert;
  client.tls_key = certificates->client_key;
  client.token_file = client_token;
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      LoadClientCredentials(client);
  ASSERT_TRUE(credentials.ok()) << credentials.status();
  options.client_credentials = *credentials;
  absl::StatusOr<std::unique_ptr<TestCluster>> cluster = TestCluster::Start({}, options);
  ASSERT_TRUE(cluster.ok()) << cluster.status();

  absl::StatusOr<v1::Search> search = (*cluster)->RunSearch(SmallSimSearch(1), kSearchTimeout);
  ASSERT_TRUE(search.ok()) << search.status();
  EXPECT_EQ(search->state(), v1::SUCCEEDED) << search->stop_reason();
  ASSERT_EQ(search->candidates_size(), 1);
  EXPECT_EQ(search->candidates(0).attempts(), 1);
  ASSERT_TRUE(WaitUntilSlurmHasNoJobs(*slurm_).ok());
  EXPECT_THAT(WorkerProcesses(), ::testing::IsEmpty());
}

// The jobs are the launcher's state: a server stopped mid-search and started again on the same
// database and address follows the jobs it submitted before, and their workers report to it.
TEST_F(SlurmLauncherTest, RestartedServerFollowsTheJobsItSubmittedBefore) {
  const absl::Time start = absl::Now();
  absl::StatusOr<int> port = PickFreeTcpPort();
  ASSERT_TRUE(port.ok()) << port.status();
  const std::string address = absl::StrCat("127.0.0.1:", *port);
  const std::string tmp = std::getenv("TEST_TMPDIR");
  std::vector<std::string> argv = {ServerBinary(), absl::StrCat("--address=", address),
                                   absl::StrCat("--port_file=", tmp, "/restart-port"),
                                   absl::StrCat("--db=", tmp, "/restart.db"),
                                   "--heartbeat_interval_seconds=1"};
  // Probes long enough to be running when the server stops.
  for (const std::string& flag : LauncherFlags(*slurm_, "e2e-restart", /*probe_seconds=*/3)) {
    argv.push_back(flag);
  }
  absl::StatusOr<std::unique_ptr<ChildProcess>> server = ChildProcess::Spawn(argv);
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_TRUE(WaitForPortFile(tmp + "/restart-port", kWaitTimeout, **server).ok());
  std::unique_ptr<v1::Autotuner::Stub> autotuner =
      v1::Autotuner::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  v1::Search created;
  ASSERT_TRUE(
      autotuner
          ->CreateSearch(ContextWithTimeout(absl::Seconds(30)).get(), SmallSimSearch(2), &created)
          .ok());
  absl::StatusOr<v1::Search> search =
      WaitForSearch(*autotuner, created.name(), HasRunningCandidate);
  ASSERT_TRUE(search.ok() && HasRunningCandidate(*search));
  const std::map<int64_t, std::string> jobs_before = ListedJobs(*slurm_);
  for (const auto& [id, job] : jobs_before) {
    std::printf("slurm: before the restart, job %lld %s\n", static_cast<long long>(id),
                job.c_str());
  }
  ASSERT_EQ(jobs_before.size(), 2u);

  (*server)->Terminate();
  std::remove((tmp + "/restart-port").c_str());
  server = ChildProcess::Spawn(argv);
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_TRUE(WaitForPortFile(tmp + "/restart-port", kWaitTimeout, **server).ok());
  search = WaitForSearch(*autotuner, created.name(),
                         [](const v1::Search& s) { return s.state() != v1::PROBING; });
  ASSERT_TRUE(search.ok()) << search.status();
  std::printf("slurm: %s %s %s after the test started: %s\n", search->name().c_str(),
              v1::SearchState_Name(search->state()).c_str(),
              absl::FormatDuration(Since(start)).c_str(), search->stop_reason().c_str());
  EXPECT_EQ(search->state(), v1::SUCCEEDED) << search->stop_reason();
  // Each probe ran once, in the job submitted before the restart.
  for (const v1::Candidate& candidate : search->candidates()) {
    EXPECT_EQ(candidate.attempts(), 1) << candidate.name();
  }
  ASSERT_TRUE(WaitUntilSlurmHasNoJobs(*slurm_).ok());
  for (const auto& [id, job] : jobs_before) {
    EXPECT_EQ(slurm_->JobState(id).value_or("?"), "COMPLETED") << id << " " << job;
  }
  EXPECT_THAT(WorkerProcesses(), ::testing::IsEmpty());
  (*server)->Terminate();
}

}  // namespace
}  // namespace paratune

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (argc < 5 || !paratune::SetTestBinaries(argc, argv)) {
    std::fprintf(stderr,
                 "usage: e2e_slurm_launcher_test PARATUNE_SERVER PARATUNE_WORKER ALERTS_YML "
                 "DASHBOARD_JSON\n");
    return 2;
  }
  // Slurm runs the job from its own working directory: an absolute path.
  paratune::ServerBinary() = argv[1];
  paratune::WorkerBinary() = std::filesystem::absolute(argv[2]).string();
  paratune::AlertRules() = argv[3];
  paratune::Dashboard() = argv[4];
  return RUN_ALL_TESTS();
}
