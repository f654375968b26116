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
#include <set>
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
#include "convert/search_text.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
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

using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::UnorderedElementsAreArray;

// The paratune CLI (argv[3]), to compare what the console shows with what it prints.
std::string& CliPath() {
  static std::string* path = new std::string;
  return *path;
}

// What `paratune ARGS` prints; a failure of the test when it does not exit 0.
std::string Cli(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {CliPath()};
  argv.insert(argv.end(), args.begin(), args.end());
  absl::StatusOr<CommandResult> result = RunCommand(argv);
  EXPECT_TRUE(result.ok()) << result.status();
  if (!result.ok()) return "";
  EXPECT_TRUE(result->succeeded()) << absl::StrJoin(argv, " ") << ":\n" << result->output;
  return result->output;
}

// A search whose every candidate splits Llama-2-13B's 40 layers unevenly over pp 2 with an
// interleaved pipeline (vp 3 or 21: pp x vp divides 42, not 40) and recomputes (selective
// or full), on 4 sim GPUs: candidates differ in vp alone, or in recompute alone, so a page
// that dropped either would show two the same. The flags of `paratune plan` that plan it.
v1::CreateSearchRequest InterleavedUnevenSearch() {
  v1::CreateSearchRequest request = SmallSimSearch(/*top_k=*/6, /*nodes=*/1, /*gpus_per_node=*/4);
  v1::SearchSpec& spec = *request.mutable_spec();
  spec.mutable_model()->set_preset("llama2-13b");
  spec.mutable_training()->set_seq_len(4096);
  v1::SearchSpace& space = *spec.mutable_space();
  space.add_virtual_pipeline_sizes(3);
  space.add_virtual_pipeline_sizes(21);
  space.add_recompute_modes(v1::RECOMPUTE_SELECTIVE);
  space.add_recompute_modes(v1::RECOMPUTE_FULL);
  space.set_allow_uneven_pipeline_stages(true);
  return request;
}
const std::vector<std::string> kInterleavedUnevenPlanFlags = {"--model=llama2-13b",
                                                              "--gpu=h100-80gb",
                                                              "--nodes=1",
                                                              "--gpus_per_node=4",
                                                              "--global_batch=64",
                                                              "--seq_len=4096",
                                                              "--virtual_pipeline_sizes=3,21",
                                                              "--recompute_modes=selective,full",
                                                              "--allow_uneven_pipeline"};

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

// The strings of the list `expression` evaluates to in the page.
std::vector<std::string> Strings(WebDriver& browser, const std::string& expression) {
  absl::StatusOr<google::protobuf::Value> value =
      browser.Execute(absl::StrCat("return ", expression, ";"));
  EXPECT_TRUE(value.ok()) << value.status();
  std::vector<std::string> strings;
  if (!value.ok()) return strings;
  for (const google::protobuf::Value& item : value->list_value().values()) {
    strings.push_back(item.string_value());
  }
  return strings;
}

// The cells of the row of `table` (text, as `paratune plan` prints it) whose first cell is
// `first`, split at runs of spaces: {"EXHAUSTIVE", "7", "72", ...}.
std::vector<std::string> TextRow(const std::string& table, const std::string& first) {
  for (absl::string_view line : absl::StrSplit(table, '\n')) {
    if (!absl::StartsWith(line, first + " ")) continue;
    const std::string rest(absl::StripAsciiWhitespace(line.substr(first.size())));
    std::vector<std::string> cells = {first};
    for (absl::string_view cell : absl::StrSplit(rest, ' ', absl::SkipEmpty())) {
      cells.emplace_back(cell);
    }
    return cells;
  }
  return {};
}

// A search whose winner is interleaved (vp > 1), recomputes and splits its layers unevenly:
// the page's best configuration is `paratune export`'s, field by field; every candidate reads
// as the CLI prints it, and no two distinct ones read the same; the memory map shows the rows
// holding candidates, all rows on request, with no label clipped; no line reads "null".
TEST_F(ConsoleTest, TheSearchPageShowsEveryFieldThatTellsCandidatesApart) {
  ASSERT_NO_FATAL_FAILURE(
      StartConsole({{"--backend=sim", "--sim_gpus=4"}}, TestCluster::Options()));
  absl::StatusOr<v1::Search> search =
      cluster_->RunSearch(InterleavedUnevenSearch(), absl::Seconds(60));
  ASSERT_TRUE(search.ok()) << search.status();
  ASSERT_EQ(search->state(), v1::SUCCEEDED) << search->stop_reason();
  const std::string id = search->name().substr(search->name().find('/') + 1);
  ASSERT_TRUE(browser_->Navigate(absl::StrCat(base_url_, "#/search/", id)).ok());
  WaitUntil("the search page", "return document.querySelector('#best .config') !== null;",
            absl::Seconds(20));

  // The export's configuration, structured.
  v1::Search exported;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(
                  Cli({"export", search->name(), "--format=json",
                       absl::StrCat("--server=", cluster_->address())}),
                  &exported)
                  .ok());
  ASSERT_EQ(exported.candidates_size(), 1);
  const v1::ParallelConfig& best = exported.candidates(0).config();
  ASSERT_GT(best.virtual_pipeline(), 1);
  ASSERT_NE(best.recompute(), v1::RECOMPUTE_NONE);
  // Megatron-LM's arguments for it split the layers unevenly.
  const std::string megatron = Cli({"export", search->name(), "--format=megatron",
                                    absl::StrCat("--server=", cluster_->address())});
  EXPECT_THAT(megatron, HasSubstr("--account-for-embedding-in-pipeline-split"));
  EXPECT_THAT(megatron, HasSubstr("--account-for-loss-in-pipeline-split"));
  EXPECT_EQ(Attribute("#best .config", "data-dp"), absl::StrCat(best.data_parallel()));
  EXPECT_EQ(Attribute("#best .config", "data-tp"), absl::StrCat(best.tensor_parallel()));
  EXPECT_EQ(Attribute("#best .config", "data-pp"), absl::StrCat(best.pipeline_parallel()));
  EXPECT_EQ(Attribute("#best .config", "data-cp"), absl::StrCat(best.context_parallel()));
  EXPECT_EQ(Attribute("#best .config", "data-mbs"), absl::StrCat(best.micro_batch_size()));
  EXPECT_EQ(Attribute("#best .config", "data-vp"), absl::StrCat(best.virtual_pipeline()));
  EXPECT_EQ(Attribute("#best .config", "data-recompute"),
            best.recompute() == v1::RECOMPUTE_FULL ? "full" : "selective");
  EXPECT_EQ(Text("#best .config"), DescribeConfig(best));
  // The stop reason names the same configuration.
  EXPECT_THAT(Text("#stop-reason"), HasSubstr(DescribeConfig(best)));

  // Every candidate as the CLI prints it, in the server's order; none twice.
  std::vector<std::string> cli_labels;
  for (const v1::Candidate& candidate : search->candidates()) {
    cli_labels.push_back(DescribeConfig(candidate.config()));
  }
  const std::vector<std::string> page_labels =
      Strings(*browser_,
              "[...document.querySelectorAll('#candidates .config')]"
              ".map(e => e.textContent)");
  EXPECT_THAT(page_labels, ElementsAreArray(cli_labels));
  EXPECT_EQ(std::set<std::string>(page_labels.begin(), page_labels.end()).size(),
            page_labels.size());

  // The memory map: the rows holding a candidate, then every row.
  // The search's plan, as the page read it.
  absl::StatusOr<google::protobuf::Value> plan_json = browser_->Execute(absl::StrCat(
      "return fetch('/api/search_plan?name=", search->name(), "').then(r => r.text());"));
  ASSERT_TRUE(plan_json.ok()) << plan_json.status();
  v1::PlanResponse plan;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(plan_json->string_value(), &plan).ok());
  std::set<std::string> candidate_configs(cli_labels.begin(), cli_labels.end());
  int holding = 0;
  for (const v1::MemoryMapRow& row : plan.memory_map().rows()) {
    bool holds = false;
    for (const v1::MemoryMapCell& cell : row.cells()) {
      v1::ParallelConfig config = row.shape();
      config.set_micro_batch_size(cell.micro_batch_size());
      holds = holds || candidate_configs.count(DescribeConfig(config)) > 0;
    }
    holding += holds;
  }
  ASSERT_GT(holding, 0);
  ASSERT_LT(holding, plan.memory_map().rows_size());
  EXPECT_EQ(Number("document.querySelectorAll('#heat-map .row-label').length"), holding);
  EXPECT_EQ(Number("document.querySelectorAll('#heat-map g.cell[data-candidate=true]').length"),
            search->candidates_size());
  // Row labels are distinct (vp and recompute shown) and none is clipped by the plot's edge.
  const std::vector<std::string> rows =
      Strings(*browser_,
              "[...document.querySelectorAll('#heat-map .row-label')]"
              ".map(e => e.textContent)");
  EXPECT_EQ(std::set<std::string>(rows.begin(), rows.end()).size(), rows.size());
  EXPECT_THAT(rows.front(), HasSubstr(" vp"));
  EXPECT_THAT(rows.front(), HasSubstr(" recompute="));
  EXPECT_EQ(Number("[...document.querySelectorAll('#heat-map .row-label')]"
                   ".filter(e => e.getBBox().x < 0).length"),
            0);
  // No part of the page reads "null".
  EXPECT_EQ(Number("document.body.innerText.split('\\n').filter(l => l.includes('null'))"
                   ".length"),
            0);
  KeepScreenshot("search-vp");

  ASSERT_TRUE(
      browser_->Execute("document.querySelector('#memory-map-toggle').click(); return true;").ok());
  EXPECT_EQ(Number("document.querySelectorAll('#heat-map .row-label').length"),
            plan.memory_map().rows_size());

  ASSERT_TRUE(browser_->Navigate(absl::StrCat(base_url_, "#/searches")).ok());
  WaitUntil("the searches table", "return document.querySelector('#searches .config') !== null;",
            absl::Seconds(10));
  EXPECT_EQ(Text("#searches .config"), DescribeConfig(best));
  KeepScreenshot("searches-vp");
}

// The planner's form plans as `paratune plan` with the same flags: its projected cost is the
// one the CLI prints, row for row, and a configuration is explained as `plan --explain`
// explains it.
TEST_F(ConsoleTest, ThePlannerFormPlansAndExplainsAsTheCli) {
  ASSERT_NO_FATAL_FAILURE(StartConsole({}, TestCluster::Options()));
  ASSERT_TRUE(browser_->Navigate(absl::StrCat(base_url_, "#/plan")).ok());
  WaitUntil("the planner", "return document.querySelector('#plan-button') !== null;",
            absl::Seconds(10));
  ASSERT_TRUE(browser_
                  ->Execute("const set = (id, v) => { document.getElementById(id).value = v; };"
                            "set('plan-model', 'llama2-13b'); set('plan-gpu', 'h100-80gb');"
                            "set('plan-nodes', 1); set('plan-gpus-per-node', 4);"
                            "set('plan-seq-len', 4096); set('plan-global-batch', 64);"
                            "document.getElementById('plan-recompute-none').checked = false;"
                            "document.getElementById('plan-recompute-selective').checked = true;"
                            "document.getElementById('plan-recompute-full').checked = true;"
                            "document.getElementById('plan-button').click(); return true;")
                  .ok());
  WaitUntil("the plan", "return document.querySelector('#plan-ranking') !== null;",
            absl::Seconds(20));
  const std::vector<std::string> flags = {"--model=llama2-13b",
                                          "--gpu=h100-80gb",
                                          "--nodes=1",
                                          "--gpus_per_node=4",
                                          "--seq_len=4096",
                                          "--global_batch=64",
                                          "--recompute_modes=selective,full"};
  std::vector<std::string> plan_args = {"plan"};
  plan_args.insert(plan_args.end(), flags.begin(), flags.end());
  const std::string printed = Cli(plan_args);
  for (const std::string policy : {"ADAPTIVE", "EXHAUSTIVE"}) {
    const std::vector<std::string> row = TextRow(printed, policy);
    ASSERT_FALSE(row.empty()) << policy << " in:\n" << printed;
    EXPECT_THAT(Strings(*browser_, absl::StrCat("[...[...document.querySelectorAll("
                                                "'#plan-cost tr')].find(r => r.cells[0]."
                                                "textContent === '",
                                                policy, "').cells].map(c => c.textContent)")),
                ElementsAreArray(row))
        << policy;
  }
  EXPECT_GE(Number("document.querySelectorAll('#plan-ranking tbody tr').length"), 1);
  EXPECT_GE(Number("document.querySelectorAll('#plan-output g.cell').length"), 1);

  // The best candidate explained, as `plan --explain` explains it.
  ASSERT_TRUE(
      browser_
          ->Execute("document.querySelector('#plan-ranking .explain-row').click(); return true;")
          .ok());
  WaitUntil("the explanation", "return document.querySelector('#explain-memory') !== null;",
            absl::Seconds(20));
  const std::string best_config = Text("#plan-ranking .config");
  const std::string reason = Text("#explain-reason");
  EXPECT_THAT(reason, HasSubstr(": a candidate: #1 of "));
  std::vector<std::string> explain_args = plan_args;
  explain_args.push_back("--explain");
  for (const char* name : {"dp", "tp", "pp", "cp", "mbs", "vp", "recompute"}) {
    const std::string value = Attribute("#plan-ranking .config", absl::StrCat("data-", name));
    if (!value.empty()) explain_args.push_back(absl::StrCat("--", name, "=", value));
  }
  const std::string explained = Cli(explain_args);
  EXPECT_EQ(explained.substr(0, explained.find('\n')), reason);
  EXPECT_THAT(reason, HasSubstr(best_config));
  EXPECT_THAT(Text("#explain-memory"), HasSubstr("optimizer_states"));
  KeepScreenshot("planner-form");

  // A configuration typed in, that breaks a rule.
  ASSERT_TRUE(browser_
                  ->Execute("document.getElementById('explain-tp').value = 3;"
                            "document.getElementById('explain-button').click(); return true;")
                  .ok());
  WaitUntil("the rejection",
            "const e = document.querySelector('#explain-reason');"
            "return e !== null && e.textContent.includes('rejected by a validity rule');",
            absl::Seconds(20));
  EXPECT_EQ(Number("document.querySelectorAll('#explain-memory').length"), 0);

  // A newcomer's Llama-3.1-70B on 2 x 8 H100-80GB without recompute: nothing fits as asked;
  // the page says that recompute was added and lists the changes `paratune plan` prints, row
  // for row.
  ASSERT_TRUE(browser_
                  ->Execute("const set = (id, v) => { document.getElementById(id).value = v; };"
                            "set('plan-model', 'llama3.1-70b'); set('plan-nodes', 2);"
                            "set('plan-gpus-per-node', 8); set('plan-seq-len', 8192);"
                            "set('plan-global-batch', 1024);"
                            "for (const m of ['none', 'selective', 'full']) {"
                            "  document.getElementById('plan-recompute-' + m).checked = false;"
                            "}"
                            "document.getElementById('plan-button').click(); return true;")
                  .ok());
  WaitUntil("the advice", "return document.querySelector('#plan-advice') !== null;",
            absl::Seconds(30));
  EXPECT_EQ(Number("document.querySelectorAll('#plan-recompute-added').length"), 1);
  const std::string advised = Cli({"plan", "--model=llama3.1-70b", "--gpu=h100-80gb", "--nodes=2",
                                   "--gpus_per_node=8", "--seq_len=8192", "--global_batch=1024"});
  const std::vector<std::string> rows =
      Strings(*browser_,
              "[...document.querySelectorAll('#plan-advice tbody tr')].map("
              "r => r.cells[0].textContent + '|' + r.cells[1].textContent)");
  ASSERT_FALSE(rows.empty());
  std::vector<std::string> printed_rows;
  for (absl::string_view line : absl::StrSplit(advised, '\n')) {
    line = absl::StripTrailingAsciiWhitespace(line);
    for (const std::string& row : rows) {
      const std::vector<std::string> cells = absl::StrSplit(row, '|');
      if (absl::StartsWith(line, cells[0]) && absl::EndsWith(line, cells[1])) {
        printed_rows.push_back(row);
      }
    }
  }
  EXPECT_THAT(printed_rows, ElementsAreArray(rows)) << advised;
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

// `paratune ARGS --server=ADDRESS`, piped (not a terminal: nothing is fitted to a width); its
// output, after checking that it succeeded.
std::string Cli(std::vector<std::string> args, const std::string& address) {
  args.push_back(absl::StrCat("--server=", address));
  return Cli(args);
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

  // Alice's search, with no worker to probe it, has no result yet: no empty plot, and no
  // line of the page reads "null" (it has no best configuration).
  const std::string id = alices->name().substr(alices->name().find('/') + 1);
  ASSERT_TRUE(browser_->Navigate(absl::StrCat(base_url_, "#/search/", id)).ok());
  WaitUntil("alice's search", "return document.querySelector('#search-state') !== null;",
            absl::Seconds(10));
  EXPECT_THAT(Text("#convergence-empty"), HasSubstr("appear with the first result"));
  EXPECT_EQ(Number("document.querySelectorAll('#convergence-probes').length"), 0);
  EXPECT_EQ(Number("document.querySelectorAll('#best').length"), 0);
  EXPECT_EQ(Number("document.body.innerText.split('\\n').filter(l => l.includes('null'))"
                   ".length"),
            0);
  KeepScreenshot("search-without-results");
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
