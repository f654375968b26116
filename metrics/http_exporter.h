// Serves a Registry's metrics at GET /metrics in the text exposition format over HTTP
// (common/http_listener.h), for Prometheus to scrape.
#ifndef PARATUNE_METRICS_HTTP_EXPORTER_H_
#define PARATUNE_METRICS_HTTP_EXPORTER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/http_listener.h"
#include "metrics/registry.h"

struct mg_connection;

namespace paratune::metrics {

// Thread-safe. Start() it, read port(), destroy it to stop serving.
class HttpExporter {
 public:
  struct Options {
    // host:port to listen on, IPv4 (e.g. 127.0.0.1:9464, 0.0.0.0:9464); port 0 picks a free
    // port (see port()).
    std::string address = "127.0.0.1:0";
    // What /metrics renders; must outlive the exporter. Not owned.
    const Registry* registry = nullptr;
    // Threads answering requests; scrapes are few and short.
    int threads = 2;
  };

  // INVALID_ARGUMENT naming the option for a malformed address, a null registry or a thread
  // count outside [1, 64]; UNAVAILABLE with civetweb's reason when the address cannot be
  // bound.
  static absl::StatusOr<std::unique_ptr<HttpExporter>> Start(const Options& options);

  HttpExporter(const HttpExporter&) = delete;
  HttpExporter& operator=(const HttpExporter&) = delete;
  // Stops serving (destroying the listener); waits for requests in progress.
  ~HttpExporter() = default;

  // The bound port.
  int port() const { return listener_->port(); }

 private:
  explicit HttpExporter(const Registry* registry) : registry_(registry) {}
  static int HandleMetrics(mg_connection* connection, void* exporter);

  const Registry* const registry_;
  // Last: destroyed first, so that no request runs on a half-destroyed exporter.
  std::unique_ptr<HttpListener> listener_;
};

}  // namespace paratune::metrics

#endif  // PARATUNE_METRICS_HTTP_EXPORTER_H_
