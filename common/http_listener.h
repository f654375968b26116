// An embedded HTTP server (civetweb, Debian's libcivetweb) listening on one address, with its
// request handlers: what paratune's /metrics endpoint and web console are served by. It owns
// civetweb's start-up (port 0 picks a free port, read back as port()) and shut-down; what each
// path answers is the handlers'.
#ifndef PARATUNE_COMMON_HTTP_LISTENER_H_
#define PARATUNE_COMMON_HTTP_LISTENER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

struct mg_context;
struct mg_connection;

namespace paratune {

// Thread-safe. Start() it, read port(), destroy it to stop serving.
class HttpListener {
 public:
  // civetweb's request handler (mg_request_handler): answers the request on `connection`
  // and returns its HTTP status. Runs on one of the listener's threads.
  using Handler = int (*)(mg_connection* connection, void* data);

  struct Route {
    // civetweb's URI pattern: "/api" matches /api and every path under it, "/metrics$" only
    // /metrics; the longest matching pattern wins.
    std::string pattern;
    Handler handler = nullptr;
    // Passed to `handler`; must outlive the listener. Not owned.
    void* data = nullptr;
  };

  struct Options {
    // HOST:PORT to listen on, as civetweb takes it (IPv4); port 0 picks a free port. Callers
    // check its shape themselves, with errors naming their own flag.
    std::string address = "127.0.0.1:0";
    // The option or flag that gave `address` and what is served, for messages:
    // "cannot serve metrics on metrics_address (\"0.0.0.0:80\"): ...".
    std::string address_name = "address";
    std::string served = "HTTP";
    // Threads answering requests.
    int threads = 2;
    std::vector<Route> routes;
  };

  // INVALID_ARGUMENT for threads outside [1, 64] or a route without a handler; UNAVAILABLE
  // naming address_name, the address and civetweb's reason when it cannot be bound.
  static absl::StatusOr<std::unique_ptr<HttpListener>> Start(const Options& options);

  HttpListener(const HttpListener&) = delete;
  HttpListener& operator=(const HttpListener&) = delete;
  // Stops serving; waits for requests in progress.
  ~HttpListener();

  // The bound port.
  int port() const { return port_; }

 private:
  HttpListener() = default;

  mg_context* context_ = nullptr;
  int port_ = 0;
};

}  // namespace paratune

#endif  // PARATUNE_COMMON_HTTP_LISTENER_H_
