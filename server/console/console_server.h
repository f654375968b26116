// paratune-server's web console (docs/console.md): the pages of server/console/assets/ at /
// and their JSON API (console_api.h) at /api/, over plain HTTP (civetweb). Debian's civetweb
// is built without TLS, so a bearer token must never travel to it over a network: with a
// token file the console listens on loopback only (reach it remotely through an SSH
// tunnel); without one, a non-loopback address needs --insecure_allow_remote, as the gRPC
// port does.
#ifndef PARATUNE_SERVER_CONSOLE_CONSOLE_SERVER_H_
#define PARATUNE_SERVER_CONSOLE_CONSOLE_SERVER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/http_listener.h"
#include "server/console/console_api.h"

struct mg_connection;

namespace paratune {

// Thread-safe. Start() it, read port(), destroy it to stop serving.
class ConsoleServer {
 public:
  struct Options {
    // host:port (IPv4) to listen on; port 0 picks a free port (see port()).
    std::string address = "127.0.0.1:0";
    // A non-loopback address without a token file (--insecure_allow_remote).
    bool allow_remote = false;
    // Threads answering requests; each page polls a few small requests a second.
    int threads = 4;
    ConsoleApi::Options api;
  };

  // INVALID_ARGUMENT naming console_address for a malformed address; FAILED_PRECONDITION for
  // a non-loopback address with a token file (tokens would cross the network in plaintext)
  // or, without one, without allow_remote; INVALID_ARGUMENT for a null reader or threads
  // outside [1, 64]; UNAVAILABLE with civetweb's reason when the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<ConsoleServer>> Start(Options options);

  ConsoleServer(const ConsoleServer&) = delete;
  ConsoleServer& operator=(const ConsoleServer&) = delete;
  // Stops serving (destroying the listener); waits for requests in progress.
  ~ConsoleServer() = default;

  // The bound port.
  int port() const { return listener_->port(); }

 private:
  ConsoleServer(ConsoleApi::Options api, bool loopback)
      : api_(std::move(api)), loopback_(loopback) {}
  static int HandleApi(mg_connection* connection, void* server);
  static int HandleAsset(mg_connection* connection, void* server);

  const ConsoleApi api_;
  // Listening on loopback: requests must name a loopback host too (see HandleApi).
  const bool loopback_;
  // Last: destroyed first, so that no request runs on a half-destroyed server.
  std::unique_ptr<HttpListener> listener_;
};

}  // namespace paratune

#endif  // PARATUNE_SERVER_CONSOLE_CONSOLE_SERVER_H_
