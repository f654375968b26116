#include "tests/prometheus_server.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/free_port.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "tests/http_client.h"
#include "tests/run_command.h"

namespace paratune {
namespace {

constexpr absl::Duration kPollInterval = absl::Milliseconds(200);

std::string TempDir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir != nullptr ? dir : "/tmp";
}

absl::StatusOr<HttpResponse> ApiGet(int port, const std::string& promql,
                                    const std::string& path_and_query) {
  absl::StatusOr<HttpResponse> response = HttpGet(port, path_and_query);
  if (!response.ok()) return response.status();
  if (response->status_code != 200) {
    return absl::InternalError(
        absl::StrCat("query ", promql, ": HTTP ", response->status_code, ": ", response->body));
  }
  return response;
}

}  // namespace

absl::StatusOr<std::unique_ptr<PrometheusServer>> PrometheusServer::Start(const Options& options) {
  absl::StatusOr<std::string> binary = FindProgram("prometheus", "prometheus");
  if (!binary.ok()) return binary.status();
  absl::StatusOr<int> port = PickFreeTcpPort();
  if (!port.ok()) return port.status();
  // A folder per server, so that no test reads another's samples.
  const std::string dir = absl::StrCat(TempDir(), "/prometheus-", *port);
  std::filesystem::create_directories(dir);
  const std::string config_path = absl::StrCat(dir, "/prometheus.yml");
  FILE* config = std::fopen(config_path.c_str(), "w");
  if (config == nullptr) return absl::InternalError("cannot write " + config_path);
  std::vector<std::string> workers;
  for (int worker_port : options.worker_ports) {
    workers.push_back(absl::StrCat("\"127.0.0.1:", worker_port, "\""));
  }
  std::fprintf(config,
               "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
               "rule_files: [\"%s\"]\n"
               "scrape_configs:\n"
               "  - job_name: paratune-server\n"
               "    static_configs:\n      - targets: [\"127.0.0.1:%d\"]\n"
               "  - job_name: paratune-worker\n"
               "    static_configs:\n      - targets: [%s]\n",
               std::filesystem::absolute(options.alert_rules).c_str(), options.server_port,
               absl::StrJoin(workers, ", ").c_str());
  std::fclose(config);
  std::unique_ptr<PrometheusServer> server(new PrometheusServer(*port, options.timeout));
  absl::StatusOr<std::unique_ptr<ChildProcess>> process = ChildProcess::Spawn(
      {*binary, absl::StrCat("--config.file=", config_path),
       absl::StrCat("--storage.tsdb.path=", dir, "/tsdb"),
       absl::StrCat("--web.listen-address=127.0.0.1:", *port), "--log.level=warn"});
  if (!process.ok()) return process.status();
  server->process_ = *std::move(process);
  // Bounded polling of the readiness endpoint: Prometheus has no other signal.
  const absl::Time give_up = absl::Now() + options.timeout;
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

absl::StatusOr<PrometheusServer::Answer> PrometheusServer::Query(const std::string& promql) {
  absl::StatusOr<HttpResponse> response =
      ApiGet(port_, promql, absl::StrCat("/api/v1/query?query=", UrlEncode(promql)));
  if (!response.ok()) return response.status();
  Answer answer{response->body, std::nullopt};
  static const std::regex* const scalar =
      new std::regex("\"resultType\":\"scalar\",\"result\":\\[[0-9.e+]+,\"([^\"]+)\"\\]");
  std::smatch match;
  double value = 0;
  if (std::regex_search(answer.json, match, *scalar) && absl::SimpleAtod(match[1].str(), &value)) {
    answer.scalar = value;
  }
  return answer;
}

absl::StatusOr<PrometheusServer::Answer> PrometheusServer::WaitForScalar(const std::string& promql,
                                                                         double expected) {
  const absl::Time give_up = absl::Now() + timeout_;
  while (true) {
    absl::StatusOr<Answer> answer = Query(promql);
    if (!answer.ok()) return answer.status();
    if (answer->scalar == expected || absl::Now() >= give_up) return answer;
    absl::SleepFor(kPollInterval);
  }
}

absl::StatusOr<bool> PrometheusServer::WaitForRangeData(const std::string& promql,
                                                        absl::Time start) {
  const absl::Time give_up = absl::Now() + timeout_;
  while (true) {
    absl::StatusOr<HttpResponse> response =
        ApiGet(port_, promql,
               absl::StrCat("/api/v1/query_range?query=", UrlEncode(promql),
                            "&start=", absl::ToUnixSeconds(start),
                            "&end=", absl::ToUnixSeconds(absl::Now()), "&step=1"));
    if (!response.ok()) return response.status();
    google::protobuf::Struct answer;
    const auto parsed = google::protobuf::util::JsonStringToMessage(response->body, &answer);
    if (!parsed.ok())
      return absl::InternalError(
          absl::StrCat("query ", promql, ": ", std::string(parsed.message())));
    const auto& result =
        answer.fields().at("data").struct_value().fields().at("result").list_value();
    if (result.values_size() > 0) return true;
    if (absl::Now() >= give_up) return false;
    absl::SleepFor(kPollInterval);
  }
}

}  // namespace paratune
