// The web console (docs/console.md) in a real browser: headless Chromium, driven over
// WebDriver, against a paratune-server with a sim worker. Each page must render its content
// (DOM assertions), the search page must follow a running search to its end without a reload,
// no page may log an error, and each page's screenshot is kept in the test's outputs. With a
// token file, the sign-in page must refuse a wrong token and a client see only its searches.
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "common/client_credentials.h"
#include "common/small_file.h"
#include "common/test_certificates.h"
#include "common/test_file.h"
#include "convert/search_progress.h"
#include "gmock/gmock.h"
#include "grpcpp/create_channel.h"
#include "gtest/gtest.h"
#include "proto/autotuner_service.grpc.pb.h"
#include "server/core/test_requests.h"
#include "tests/http_client.h"
#include "tests/metrics_text.h"
#include "tests/run_command.h"
#include "tests/test_cluster.h"
#include "tests/web_driver.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

std::string TestDirectory(const char* variable) {
  const char* directory = std::getenv(variable);
  return directory != nullptr ? directory : ::testing::TempDir();
}

constexpr char kAliceToken[] = "console-alice-token-1a2b3c4d";
constexpr char kBobToken[] = "console-bob-token-5e6f7a8b";
constexpr char kWrongToken[] = "console-wrong-token-00000000";

// TLS with the test CA and `token`: the gRPC side of a server with a token file.
std::shared_ptr<grpc::ChannelCredentials> TlsWithToken(const TestCertificates& certs,
                                                       const std::string& token) {
  ClientCredentialsOptions options;
  options.tls_ca = certs.ca_cert;
  options.token_file = WriteTestFile(absl::StrCat("token-", token), token + "\n");
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      LoadClientCredentials(options);
  EXPECT_TRUE(credentials.ok()) << credentials.status();
  return credentials.ok() ? *credentials : grpc::InsecureChannelCredentials();
}

class ConsoleTest : public ::testing::Test {
 protected:
  // Starts a server with the console (and `options`), a worker per entry of `worker_flags`,
  // and the browser.
  void StartConsole(const std::vector<std::vector<std::string>>& worker_flags,
                    TestCluster::Options options) {
    const std::string port_file = absl::StrCat(TestDirectory("TEST_TMPDIR"), "/console_port");
    options.server_flags.push_back("--console_address=127.0.0.1:0");
    options.server_flags.push_back(absl::StrCat("--console_port_file=", port_file));
    absl::StatusOr<std::unique_ptr<TestCluster>> cluster =
        TestCluster::Start(worker_flags, options);
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = *std::move(cluster);
    // Written before the server's --port_file, which TestCluster::Start waited for.
    absl::StatusOr<std::string> port = ReadSmallFile(port_file, 64);
    ASSERT_TRUE(port.ok()) << port.status();
    base_url_ = absl::StrCat("http://127.0.0.1:", absl::StripAsciiWhitespace(*port), "/");
    absl::StatusOr<std::unique_ptr<WebDriver>> browser =
        WebDriver::Start(absl::StrCat(TestDirectory("TEST_TMPDIR"), "/chromium-profile"));
    ASSERT_TRUE(browser.ok()) << browser.status();
    browser_ = *std::move(browser);
  }

  // Runs `script` until it returns true (at most `timeout`); its last value otherwise.
  void WaitUntil(const std::string& what, const std::string& script, absl::Duration timeout) {
    const absl::Time deadline = absl::Now() + timeout;
    std::string last;
    while (absl::Now() < deadline) {
      absl::StatusOr<google::protobuf::Value> value = browser_->Execute(script);
      ASSERT_TRUE(value.ok()) << value.status();
      if (value->bool_value()) return;
      last = value->DebugString();
      absl::SleepFor(absl::Milliseconds(100));
    }
    FAIL() << "timed out waiting for " << what << "; last value: " << last;
  }

  std::string Text(const std::string& selector) {
    absl::StatusOr<google::protobuf::Value> value = browser_->Execute(absl::StrCat(
        "const e = document.querySelector('", selector, "'); return e ? e.textContent : '';"));
    EXPECT_TRUE(value.ok()) << value.status();
    return value.ok() ? value->string_value() : "";
  }

  // Attribute `name` of the element `selector` finds; "" when there is none.
  std::string Attribute(const std::string& selector, const std::string& name) {
    absl::StatusOr<google::protobuf::Value> value = browser_->Execute(
        absl::StrCat("const e = document.querySelector('", selector, "'); return e ? ",
                     "(e.getAttribute('", name, "') || '') : '';"));
    EXPECT_TRUE(value.ok()) << value.status();
    return value.ok() ? value->string_value() : "";
  }

  double Number(const std::string& expression) {
    absl::StatusOr<google::protobuf::Value> value =
        browser_->Execute(absl::StrCat("return ", expression, ";"));
    EXPECT_TRUE(value.ok()) << value.status();
    return value.ok() ? value->number_value() : -1;
  }

  // Saves the page as `name`.png among the test's outputs, and checks that it logged no error
  // since the last check. With `refusals_expected`, the API's 401 answers (a sign-in page
  // asking for a token, a wrong token refused), which the browser logs as failed loads, are
  // not errors; anything else is.
  void KeepScreenshot(const std::string& name, bool refusals_expected = false) {
    absl::StatusOr<std::string> png = browser_->Screenshot();
    ASSERT_TRUE(png.ok()) << png.status();
    std::ofstream(absl::StrCat(TestDirectory("TEST_UNDECLARED_OUTPUTS_DIR"), "/", name, ".png"),
                  std::ios::binary)
        << *png;
    absl::StatusOr<std::vector<std::string>> entries = browser_->SevereLogEntries();
    ASSERT_TRUE(entries.ok()) << entries.status();
    std::vector<std::string> errors;
    for (const std::string& entry : *entries) {
      const bool refusal = absl::StartsWith(entry, "network: ") &&
                           absl::StrContains(entry, "/api/") &&
                           absl::StrContains(entry, "status of 401");
      if (!(refusals_expected && refusal)) errors.push_back(entry);
    }
    EXPECT_THAT(errors, IsEmpty()) << "on the page " << name;
  }

  // Types `token` into the sign-in page and signs in.
  void SignIn(const std::string& token) {
    ASSERT_TRUE(browser_
                    ->Execute(absl::StrCat("document.querySelector('#token').value = '", token,
                                           "'; document.querySelector('#login').click(); "
                                           "return true;"))
                    .ok());
  }

  std::unique_ptr<TestCluster> cluster_;
  std::unique_ptr<WebDriver> browser_;
  std::string base_url_;
};

TEST_F(ConsoleTest, PagesRenderAndFollowASearchLive) {
  // Probes of 2.5 s keep the search alive for about 10 s, time for Chromium to open the page
  // on a loaded 2-core machine (with 0.4 s the search once ended first, in 1.7 s).
  ASSERT_NO_FATAL_FAILURE(StartConsole(
      {{"--backend=sim", "--sim_gpus=8", "--sim_probe_seconds=2.5"}}, TestCluster::Options()));
  v1::CreateSearchRequest request = SmallSimSearch(/*top_k=*/4);
  request.mutable_spec()->set_policy(v1::ADAPTIVE);
  absl::StatusOr<v1::Search> search = cluster_->CreateSearch(request);
  ASSERT_TRUE(search.ok()) << search.status();
  const std::string id = search->name().substr(search->name().find('/') + 1);

  // Opened while it probes, the search page must reach the end by itself (polling).
  ASSERT_TRUE(browser_->Navigate(absl::StrCat(base_url_, "#/search/", id)).ok());
  WaitUntil("the search page", "return document.querySelector('#search-state') !== null;",
            absl::Seconds(10));
  const std::string first_state = Text("#search-state");
  WaitUntil("the search to end on the page",
            "const s = document.querySelector('#search-state');"
            "return s !== null && s.textContent === 'SUCCEEDED';",
            absl::Seconds(40));
  EXPECT_NE(first_state, "SUCCEEDED") << "the page opened after the search ended; no live update";
  EXPECT_GE(Number("document.querySelectorAll('#candidates tbody tr').length"), 1);
  EXPECT_THAT(Text("#candidates"), HasSubstr("simulated"));
  EXPECT_THAT(Text("#best"), HasSubstr("TFLOP/s per GPU"));
  EXPECT_GE(Number("document.querySelectorAll('#convergence-probes path').length"), 1);
  EXPECT_THAT(Text("#convergence-probes"), HasSubstr("TFLOP/s per GPU"));
  EXPECT_THAT(Text("#convergence-gpu-hours"), HasSubstr("GPU-hours spent"));
  EXPECT_GE(Number("document.querySelectorAll('#heat-map g.cell').length"), 4);
  EXPECT_GE(Number("document.querySelectorAll('#heat-map g.cell[data-probed=true]').length"), 1);
  EXPECT_GE(Number("document.querySelectorAll('#gang-timeline rect').length"), 1);
  EXPECT_THAT(Text("#events"), HasSubstr("leased to workers/"));
  // Polls ask only for the events after the last one shown: none is shown twice.
  EXPECT_EQ(Number("new Set([...document.querySelectorAll('#events div')].map("
                   "e => e.textContent)).size"),
            Number("document.querySelectorAll('#events div').length"));
  // ... and none is missing.
  absl::StatusOr<std::vector<v1::SearchEvent>> logged = cluster_->Events(search->name());
  ASSERT_TRUE(logged.ok()) << logged.status();
  EXPECT_EQ(Number("document.querySelectorAll('#events div').length"),
            static_cast<double>(logged->size()));
  // One optimistic bound per candidate ADAPTIVE chose, each drawn at its first probe.
  double picks = 0;
  for (const v1::SearchEvent& event : *logged) picks += event.kind() == v1::EVENT_PLANNED;
  EXPECT_GE(picks, 1);
  EXPECT_EQ(Number("document.querySelectorAll("
                   "'#convergence-probes g[data-series=bound] rect').length"),
            picks);
  KeepScreenshot("search");

  ASSERT_TRUE(browser_->Navigate(absl::StrCat(base_url_, "#/searches")).ok());
  WaitUntil("the searches table", "return document.querySelector('#searches') !== null;",
            absl::Seconds(10));
  EXPECT_THAT(Text("#searches"), HasSubstr(search->name()));
  EXPECT_THAT(Text("#searches"), HasSubstr("SUCCEEDED"));
  KeepScreenshot("searches");

  ASSERT_TRUE(browser_->Navigate(absl::StrCat(base_url_, "#/workers")).ok());
  WaitUntil("the workers table", "return document.querySelector('#workers') !== null;",
            absl::Seconds(10));
  EXPECT_THAT(Text("#workers"), HasSubstr("h100-80gb"));
  KeepScreenshot("workers");

  ASSERT_TRUE(browser_->Navigate(absl::StrCat(base_url_, "#/plan")).ok());
  WaitUntil("the planner", "return document.querySelector('#plan-button') !== null;",
            absl::Seconds(10));
  ASSERT_TRUE(
      browser_->Execute("document.querySelector('#plan-button').click(); return true;").ok());
  WaitUntil("the plan", "return document.querySelector('#plan-ranking') !== null;",
            absl::Seconds(20));
  EXPECT_GE(Number("document.querySelectorAll('#plan-ranking tbody tr').length"), 1);
  EXPECT_GE(Number("document.querySelectorAll('#plan-output g.cell').length"), 1);
  KeepScreenshot("planner");
}

// A probe whose worker is lost is re-queued, and given up when the worker of its last attempt
// is lost too: the timeline draws both leases, each ending as the event log says (read from
// the events' fields, not their text), and the convergence plot counts the give-up.
TEST_F(ConsoleTest, TheTimelineShowsARequeuedLeaseAndAGiveUp) {
  TestCluster::Options options;
  // A worker silent for 3 x 0.2 s is lost.
  options.server_flags = {"--heartbeat_interval_seconds=0.2"};
  ASSERT_NO_FATAL_FAILURE(
      StartConsole({{"--backend=sim", "--sim_gpus=8", "--sim_probe_seconds=300"},
                    {"--backend=sim", "--sim_gpus=8", "--sim_probe_seconds=300"}},
                   options));
  absl::StatusOr<v1::Search> search = cluster_->CreateSearch(SmallSimSearch(/*top_k=*/1));
  ASSERT_TRUE(search.ok()) << search.status();
  ASSERT_EQ(search->spec().probe().max_attempts(), 2);
  // Kills the worker that runs attempt `attempt`, once it runs it.
  auto kill_runner = [&](int64_t attempt) {
    absl::StatusOr<v1::Search> running = cluster_->WaitForSearch(
        search->name(),
        [&](const v1::Search& s) {
          return s.candidates(0).state() == v1::CANDIDATE_RUNNING &&
                 s.candidates(0).attempts() == attempt;
        },
        absl::Seconds(30));
    ASSERT_TRUE(running.ok()) << running.status();
    absl::StatusOr<std::vector<v1::Worker>> workers = cluster_->ListWorkers();
    ASSERT_TRUE(workers.ok()) << workers.status();
    for (const v1::Worker& worker : *workers) {
      if (worker.name() != running->candidates(0).worker()) continue;
      // TestCluster names worker i's host test-worker-i.
      for (size_t i = 0; i < 2; ++i) {
        if (worker.hostname() == absl::StrCat("test-worker-", i)) cluster_->KillWorker(i);
      }
    }
  };
  ASSERT_NO_FATAL_FAILURE(kill_runner(1));
  ASSERT_NO_FATAL_FAILURE(kill_runner(2));
  absl::StatusOr<v1::Search> failed = cluster_->WaitUntilEnded(search->name(), absl::Seconds(30));
  ASSERT_TRUE(failed.ok()) << failed.status();
  ASSERT_EQ(failed->state(), v1::FAILED);

  const std::string id = search->name().substr(search->name().find('/') + 1);
  ASSERT_TRUE(browser_->Navigate(absl::StrCat(base_url_, "#/search/", id)).ok());
  WaitUntil("the timeline", "return document.querySelector('#gang-timeline') !== null;",
            absl::Seconds(10));
  const std::string first = search->name() + "/candidates/0/probes/1";
  const std::string second = search->name() + "/candidates/0/probes/2";
  EXPECT_EQ(Number("document.querySelectorAll('#gang-timeline rect').length"), 2);
  EXPECT_EQ(
      Attribute(absl::StrCat("#gang-timeline rect[data-probe=\"", first, "\"]"), "data-ending"),
      "re-queued");
  EXPECT_EQ(
      Attribute(absl::StrCat("#gang-timeline rect[data-probe=\"", second, "\"]"), "data-ending"),
      "gave up");
  EXPECT_EQ(Number("document.querySelectorAll('#gang-timeline rect.no-result').length"), 2);
  // The two leases ran on different workers.
  EXPECT_EQ(Number("new Set([...document.querySelectorAll('#gang-timeline rect')].map("
                   "r => r.getAttribute('data-worker'))).size"),
            2);
  EXPECT_THAT(Text("#events"), HasSubstr("failed: gave up after 2 of 2 attempts"));
  KeepScreenshot("timeline-requeue-give-up");
}

// The path of the paratune CLI (argv[3]).
std::string& CliPath() {
  static std::string path;
  return path;
}

// `paratune ARGS --server=ADDRESS`, piped (not a terminal: nothing is fitted to a width); its
// output, after checking that it succeeded.
std::string Cli(const std::vector<std::string>& args, const std::string& address) {
  std::vector<std::string> argv = {CliPath()};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.push_back(absl::StrCat("--server=", address));
  absl::StatusOr<CommandResult> result = RunCommand(argv);
  EXPECT_TRUE(result.ok()) << result.status();
  if (!result.ok()) return "";
  EXPECT_TRUE(result->succeeded()) << absl::StrJoin(argv, " ") << ":\n" << result->output;
  return result->output;
}

// The line of `text` that starts with `prefix`; "" when none does.
std::string LineStartingWith(const std::string& text, const std::string& prefix) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (absl::StartsWith(line, prefix)) return std::string(line);
  }
  return "";
}

// One search's progress, as the server counted it (Search.progress), is what `paratune get`,
// `list` and `watch`, both console pages and the metrics show, and it is what counting the
// candidates says. A search that failed says why in `list` and on the searches page.
TEST_F(ConsoleTest, CountsAgreeAcrossGetListWatchTheConsoleAndTheMetrics) {
  TestCluster::Options options;
  options.serve_metrics = true;
  ASSERT_NO_FATAL_FAILURE(
      StartConsole({{"--backend=sim", "--sim_gpus=8", "--sim_probe_seconds=0.2"}}, options));
  v1::CreateSearchRequest request = SmallSimSearch(/*top_k=*/4);
  request.mutable_spec()->set_policy(v1::ADAPTIVE);
  absl::StatusOr<v1::Search> created = cluster_->CreateSearch(request);
  ASSERT_TRUE(created.ok()) << created.status();
  absl::StatusOr<v1::Search> search = cluster_->WaitUntilEnded(created->name(), absl::Seconds(60));
  ASSERT_TRUE(search.ok()) << search.status();
  ASSERT_EQ(search->state(), v1::SUCCEEDED);
  // Nothing fits one GPU's memory: it fails at creation, saying why.
  v1::CreateSearchRequest too_big = SmallSimSearch(/*top_k=*/4, /*nodes=*/1,
                                                   /*gpus_per_node=*/1);
  too_big.mutable_spec()->mutable_model()->set_preset("llama3.1-70b");
  absl::StatusOr<v1::Search> failed = cluster_->CreateSearch(too_big);
  ASSERT_TRUE(failed.ok()) << failed.status();
  ASSERT_EQ(failed->state(), v1::FAILED);
  ASSERT_FALSE(failed->stop_reason().empty());

  const v1::SearchProgress& progress = search->progress();
  EXPECT_EQ(progress.SerializeAsString(), ProgressOf(*search).SerializeAsString());
  ASSERT_GT(progress.probed(), 0);
  EXPECT_EQ(progress.probed(), progress.ok() + progress.failed());
  EXPECT_GE(progress.probes(), progress.probed());
  EXPECT_EQ(progress.candidates(), search->counts().memory_safe());
  const std::string counted = absl::StrCat(
      "probed ", progress.probed(), " of ", progress.candidates(), " candidates (", progress.ok(),
      " ok, ", progress.failed(), " failed), ", progress.could_still_win(), " could still win");

  const std::string address = cluster_->address();
  EXPECT_THAT(Cli({"get", search->name()}, address), HasSubstr(counted));
  EXPECT_THAT(Cli({"watch", search->name()}, address), HasSubstr(counted));
  const std::string list = Cli({"list"}, address);
  EXPECT_THAT(LineStartingWith(list, search->name() + " "),
              HasSubstr(absl::StrCat(" ", progress.probed(), "/", progress.candidates(), " ")))
      << list;
  EXPECT_THAT(list, HasSubstr(absl::StrCat(failed->name(), " failed: ", failed->stop_reason())));

  absl::StatusOr<HttpResponse> metrics = HttpGet(cluster_->metrics_ports()[0], "/metrics");
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  for (const auto& [label, value] :
       std::vector<std::pair<std::string, int64_t>>{{"probed", progress.probed()},
                                                    {"ok", progress.ok()},
                                                    {"failed", progress.failed()},
                                                    {"could_still_win", 0},
                                                    {"total", progress.candidates()}}) {
    absl::StatusOr<double> sample =
        SampleValue(metrics->body, absl::StrCat("paratune_search_candidates{search=\"",
                                                search->name(), "\",progress=\"", label, "\"}"));
    ASSERT_TRUE(sample.ok()) << label << ": " << sample.status();
    EXPECT_EQ(*sample, static_cast<double>(value)) << label;
  }

  const std::string id = search->name().substr(search->name().find('/') + 1);
  ASSERT_TRUE(browser_->Navigate(absl::StrCat(base_url_, "#/search/", id)).ok());
  WaitUntil("the search page", "return document.querySelector('#progress') !== null;",
            absl::Seconds(10));
  EXPECT_THAT(Text("#progress"), HasSubstr(counted));
  ASSERT_TRUE(browser_->Navigate(absl::StrCat(base_url_, "#/searches")).ok());
  WaitUntil("the searches table", "return document.querySelector('#searches') !== null;",
            absl::Seconds(10));
  const auto row_text = [&](const std::string& name) {
    absl::StatusOr<google::protobuf::Value> value = browser_->Execute(
        absl::StrCat("const row = [...document.querySelectorAll('#searches tbody tr')].find("
                     "r => r.textContent.startsWith('",
                     name, "')); return row ? row.textContent : '';"));
    EXPECT_TRUE(value.ok()) << value.status();
    return value.ok() ? value->string_value() : "";
  };
  EXPECT_THAT(row_text(search->name()), HasSubstr(counted));
  EXPECT_THAT(row_text(failed->name()), HasSubstr(failed->stop_reason()));
  KeepScreenshot("searches-progress-and-failure");
}

// A server with a token file (and TLS, which tokens need on the gRPC port) and no worker: its
// searches stay PROBING. The console asks for a token, refuses a wrong one, and shows a client
// its own searches only.
TEST_F(ConsoleTest, SignInRefusesAWrongTokenAndShowsAClientOnlyItsSearches) {
  const absl::StatusOr<TestCertificates>& certs = SharedTestCertificates();
  ASSERT_TRUE(certs.ok()) << certs.status();
  TestCluster::Options options;
  options.server_flags = {
      absl::StrCat("--tls_cert=", certs->server_cert),
      absl::StrCat("--tls_key=", certs->server_key),
      absl::StrCat("--token_file=",
                   WriteTestFile("tokens", absl::StrCat("client alice ", kAliceToken,
                                                        "\nclient bob ", kBobToken, "\n")))};
  options.client_credentials = TlsWithToken(*certs, kAliceToken);
  ASSERT_NO_FATAL_FAILURE(StartConsole({}, options));
  absl::StatusOr<v1::Search> alices = cluster_->CreateSearch(SmallSimSearch(/*top_k=*/2));
  ASSERT_TRUE(alices.ok()) << alices.status();
  v1::Search bobs;
  const grpc::Status created =
      v1::Autotuner::NewStub(
          grpc::CreateChannel(cluster_->address(), TlsWithToken(*certs, kBobToken)))
          ->CreateSearch(ContextWithTimeout(absl::Seconds(30)).get(), SmallSimSearch(2), &bobs);
  ASSERT_TRUE(created.ok()) << created.error_message();

  ASSERT_TRUE(browser_->Navigate(base_url_).ok());
  WaitUntil("the sign-in page", "return document.querySelector('#login') !== null;",
            absl::Seconds(10));
  EXPECT_EQ(Text("#login-error"), "") << "an error before any token was tried";
  ASSERT_NO_FATAL_FAILURE(SignIn(kWrongToken));
  WaitUntil(
      "the refusal, visible",
      "const e = document.querySelector('#login-error');"
      "return e !== null && e.textContent.includes('refused') &&"
      "  e.getBoundingClientRect().height > 0 && getComputedStyle(e).visibility === 'visible';",
      absl::Seconds(10));
  EXPECT_THAT(Text("#login-error"), HasSubstr("not one this server accepts"));
  EXPECT_THAT(Text("#login-error"), Not(HasSubstr(kWrongToken)));
  KeepScreenshot("sign-in", /*refusals_expected=*/true);

  ASSERT_NO_FATAL_FAILURE(SignIn(kAliceToken));
  WaitUntil("alice's searches", "return document.querySelector('#searches') !== null;",
            absl::Seconds(10));
  EXPECT_EQ(Text("#who"), "signed in as alice (client)");
  EXPECT_THAT(Text("#searches"), HasSubstr(alices->name()));
  EXPECT_THAT(Text("#searches"), Not(HasSubstr(bobs.name())));
  EXPECT_EQ(Number("document.querySelectorAll('#searches tbody tr').length"), 1);
  KeepScreenshot("searches-signed-in");
}

}  // namespace
}  // namespace paratune

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (!paratune::SetTestBinaries(argc, argv) || argc < 4) {
    std::fprintf(stderr, "usage: e2e_console_test PARATUNE_SERVER PARATUNE_WORKER PARATUNE\n");
    return 2;
  }
  paratune::CliPath() = argv[3];
  return RUN_ALL_TESTS();
}
