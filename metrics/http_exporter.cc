#include "metrics/http_exporter.h"

#include <civetweb.h>

#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "metrics/text_format.h"

namespace paratune::metrics {
namespace {

// civetweb takes "HOST:PORT" for IPv4; check the shape here so that a typo gets an error
// naming the option instead of civetweb's generic one.
absl::Status CheckAddress(absl::string_view address) {
  const size_t colon = address.rfind(':');
  int port = -1;
  if (colon == absl::string_view::npos || colon == 0 ||
      !absl::SimpleAtoi(address.substr(colon + 1), &port) || port < 0 || port > 65535 ||
      address.find(':') != colon) {
    return absl::InvalidArgumentError(
        absl::StrCat("address (\"", address, "\") must be IPV4_HOST:PORT with PORT in [0, 65535]"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<HttpExporter>> HttpExporter::Start(const Options& options) {
  if (absl::Status status = CheckAddress(options.address); !status.ok()) return status;
  if (options.registry == nullptr) {
    return absl::InvalidArgumentError("registry (null) must be set");
  }
  if (options.threads < 1 || options.threads > 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("threads (", options.threads, ") must be in [1, 64]"));
  }
  mg_init_library(0);
  std::unique_ptr<HttpExporter> exporter(new HttpExporter(options.registry));
  const std::string threads = absl::StrCat(options.threads);
  const char* configuration[] = {"listening_ports", options.address.c_str(), "num_threads",
                                 threads.c_str(),
                                 // No file serving: /metrics is the only resource.
                                 "enable_directory_listing", "no", nullptr};
  mg_callbacks callbacks;
  std::memset(&callbacks, 0, sizeof(callbacks));
  mg_init_data init;
  std::memset(&init, 0, sizeof(init));
  init.callbacks = &callbacks;
  init.configuration_options = configuration;
  char error_text[256] = {};
  unsigned error_code = 0;
  mg_error_data error;
  error.code = &error_code;
  error.text = error_text;
  error.text_buffer_size = sizeof(error_text);
  exporter->context_ = mg_start2(&init, &error);
  if (exporter->context_ == nullptr) {
    mg_exit_library();
    return absl::UnavailableError(
        absl::StrCat("cannot serve metrics on address (\"", options.address, "\"): ", error_text));
  }
  mg_server_port ports[1];
  std::memset(ports, 0, sizeof(ports));
  if (mg_get_server_ports(exporter->context_, 1, ports) < 1 || ports[0].port <= 0) {
    // The destructor stops the context.
    return absl::UnavailableError(
        absl::StrCat("civetweb bound address (\"", options.address, "\") but reports no port"));
  }
  exporter->port_ = ports[0].port;
  mg_set_request_handler(exporter->context_, "/metrics$", &HttpExporter::HandleMetrics,
                         exporter.get());
  return exporter;
}

HttpExporter::~HttpExporter() {
  if (context_ == nullptr) return;
  mg_stop(context_);
  mg_exit_library();
}

int HttpExporter::HandleMetrics(mg_connection* connection, void* exporter) {
  const mg_request_info* request = mg_get_request_info(connection);
  const absl::string_view method = request->request_method;
  if (method != "GET" && method != "HEAD") {
    mg_send_http_error(connection, 405, "%s", "only GET and HEAD are allowed on /metrics\n");
    return 405;
  }
  const std::string body =
      FormatText(static_cast<const HttpExporter*>(exporter)->registry_->Collect());
  mg_printf(connection,
            "HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
            "Cache-Control: no-store\r\n\r\n",
            kTextFormatContentType, body.size());
  if (method == "GET") mg_write(connection, body.data(), body.size());
  return 200;
}

}  // namespace paratune::metrics
