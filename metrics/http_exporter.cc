#include "metrics/http_exporter.h"

#include <civetweb.h>

#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/status_macros.h"
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
  std::unique_ptr<HttpExporter> exporter(new HttpExporter(options.registry));
  HttpListener::Options listener;
  listener.address = options.address;
  listener.served = "metrics";
  listener.threads = options.threads;
  listener.routes = {{"/metrics$", &HttpExporter::HandleMetrics, exporter.get()}};
  PT_ASSIGN_OR_RETURN(exporter->listener_, HttpListener::Start(listener));
  return exporter;
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
