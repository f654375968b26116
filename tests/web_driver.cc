#include "tests/web_driver.h"

#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/free_port.h"
#include "google/protobuf/util/json_util.h"
#include "tests/http_client.h"

namespace paratune {
namespace {

std::string JsonString(const std::string& text) {
  google::protobuf::Value value;
  value.set_string_value(text);
  std::string json;
  (void)google::protobuf::util::MessageToJsonString(value, &json);
  return json;
}

}  // namespace

absl::StatusOr<std::unique_ptr<WebDriver>> WebDriver::Start(const std::string& profile_directory) {
  std::unique_ptr<WebDriver> driver(new WebDriver());
  absl::StatusOr<int> port = PickFreeTcpPort();
  if (!port.ok()) return port.status();
  driver->port_ = *port;
  absl::StatusOr<std::unique_ptr<ChildProcess>> process = ChildProcess::Spawn(
      {"/usr/bin/chromedriver", absl::StrCat("--port=", *port), "--allowed-ips=127.0.0.1"});
  if (!process.ok()) return process.status();
  driver->driver_ = *std::move(process);
  // chromedriver answers /status once it listens.
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (true) {
    absl::StatusOr<HttpResponse> status = HttpGet(*port, "/status");
    if (status.ok() && status->status_code == 200) break;
    if (absl::Now() > deadline) {
      return absl::UnavailableError(absl::StrCat("chromedriver did not answer on port ", *port));
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
  const std::string capabilities = absl::StrCat(
      R"({"capabilities":{"alwaysMatch":{"browserName":"chrome",)",
      R"("goog:loggingPrefs":{"browser":"ALL"},)",
      R"("goog:chromeOptions":{"binary":"/usr/bin/chromium","args":[)",
      R"("--headless","--no-sandbox","--disable-gpu","--disable-quic","--no-first-run",)",
      R"("--disable-background-networking","--disable-component-update","--disable-sync",)",
      R"("--disable-dev-shm-usage","--window-size=1400,2400","--user-data-dir=)", profile_directory,
      R"("]}}}})");
  absl::StatusOr<HttpResponse> created = HttpRequest(*port, "POST", "/session", capabilities);
  if (!created.ok()) return created.status();
  google::protobuf::Value answer;
  if (!google::protobuf::util::JsonStringToMessage(created->body, &answer).ok() ||
      created->status_code != 200) {
    return absl::UnavailableError(
        absl::StrCat("chromedriver refused the session: ", created->body.substr(0, 2000)));
  }
  driver->session_ = answer.struct_value()
                         .fields()
                         .at("value")
                         .struct_value()
                         .fields()
                         .at("sessionId")
                         .string_value();
  return driver;
}

WebDriver::~WebDriver() {
  if (!session_.empty()) (void)HttpRequest(port_, "DELETE", absl::StrCat("/session/", session_));
  if (driver_ != nullptr) driver_->Terminate(absl::Seconds(5));
}

absl::StatusOr<google::protobuf::Value> WebDriver::Command(const std::string& method,
                                                           const std::string& path,
                                                           const std::string& json_body) {
  absl::StatusOr<HttpResponse> response =
      HttpRequest(port_, method, absl::StrCat("/session/", session_, path), json_body);
  if (!response.ok()) return response.status();
  google::protobuf::Value answer;
  if (!google::protobuf::util::JsonStringToMessage(response->body, &answer).ok()) {
    return absl::InternalError(absl::StrCat(method, " ", path, ": not JSON: ", response->body));
  }
  if (response->status_code != 200) {
    return absl::InternalError(absl::StrCat(method, " ", path, ": HTTP ", response->status_code,
                                            ": ", response->body.substr(0, 2000)));
  }
  return answer.struct_value().fields().at("value");
}

absl::Status WebDriver::Navigate(const std::string& url) {
  return Command("POST", "/url", absl::StrCat(R"({"url":)", JsonString(url), "}")).status();
}

absl::StatusOr<google::protobuf::Value> WebDriver::Execute(const std::string& script) {
  return Command("POST", "/execute/sync",
                 absl::StrCat(R"({"script":)", JsonString(script), R"(,"args":[]})"));
}

absl::StatusOr<std::string> WebDriver::Screenshot() {
  absl::StatusOr<google::protobuf::Value> base64 = Command("GET", "/screenshot", "");
  if (!base64.ok()) return base64.status();
  std::string png;
  if (!absl::Base64Unescape(base64->string_value(), &png)) {
    return absl::InternalError("the screenshot is not base64");
  }
  return png;
}

absl::StatusOr<std::vector<std::string>> WebDriver::SevereLogEntries() {
  absl::StatusOr<google::protobuf::Value> entries =
      Command("POST", "/se/log", R"({"type":"browser"})");
  if (!entries.ok()) return entries.status();
  std::vector<std::string> severe;
  for (const google::protobuf::Value& entry : entries->list_value().values()) {
    const auto& fields = entry.struct_value().fields();
    if (fields.count("level") && fields.at("level").string_value() == "SEVERE") {
      const std::string source =
          fields.count("source") ? fields.at("source").string_value() : "unknown";
      severe.push_back(absl::StrCat(source, ": ", fields.at("message").string_value()));
    }
  }
  return severe;
}

}  // namespace paratune
