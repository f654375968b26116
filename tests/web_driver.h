// A headless Chromium driven over the W3C WebDriver protocol (chromedriver, Debian's
// chromium-driver), for the console's end-to-end test: plain HTTP and JSON on loopback, so a
// C++ test needs no browser library. Chromium runs with the flags this sandbox needs (no
// sandbox, no GPU, no background networking) and a fresh profile.
#ifndef PARATUNE_TESTS_WEB_DRIVER_H_
#define PARATUNE_TESTS_WEB_DRIVER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "google/protobuf/struct.pb.h"
#include "tests/process_harness.h"

namespace paratune {

// Thread-compatible. Destruction ends the session and chromedriver.
class WebDriver {
 public:
  // Starts /usr/bin/chromedriver on a free port and a session of /usr/bin/chromium with a
  // profile under `profile_directory`. UNAVAILABLE when either does not start.
  static absl::StatusOr<std::unique_ptr<WebDriver>> Start(const std::string& profile_directory);

  WebDriver(const WebDriver&) = delete;
  WebDriver& operator=(const WebDriver&) = delete;
  ~WebDriver();

  absl::Status Navigate(const std::string& url);
  // Runs `script` (the body of a function) in the page; its return value.
  absl::StatusOr<google::protobuf::Value> Execute(const std::string& script);
  // The page as a PNG.
  absl::StatusOr<std::string> Screenshot();
  // The browser's console messages of level SEVERE since the last call, each as
  // "SOURCE: MESSAGE": "javascript: ..." for a script's error, "network: URL - Failed to load
  // resource: ... status of 401 ..." for a request answered with an error.
  absl::StatusOr<std::vector<std::string>> SevereLogEntries();

 private:
  WebDriver() = default;
  // The "value" of the answer to `method` `path` under the session.
  absl::StatusOr<google::protobuf::Value> Command(const std::string& method,
                                                  const std::string& path,
                                                  const std::string& json_body);

  std::unique_ptr<ChildProcess> driver_;
  int port_ = 0;
  std::string session_;
};

}  // namespace paratune

#endif  // PARATUNE_TESTS_WEB_DRIVER_H_
