#include "common/http_listener.h"

#include <civetweb.h>

#include <cstring>

#include "absl/strings/str_cat.h"

namespace paratune {

absl::StatusOr<std::unique_ptr<HttpListener>> HttpListener::Start(const Options& options) {
  if (options.threads < 1 || options.threads > 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("threads (", options.threads, ") must be in [1, 64]"));
  }
  for (const Route& route : options.routes) {
    if (route.handler == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("routes: the route of \"", route.pattern, "\" has no handler"));
    }
  }
  mg_init_library(0);
  std::unique_ptr<HttpListener> listener(new HttpListener());
  const std::string threads = absl::StrCat(options.threads);
  const char* configuration[] = {"listening_ports", options.address.c_str(), "num_threads",
                                 threads.c_str(),
                                 // Every answer comes from a handler, never from the file
                                 // system.
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
  listener->context_ = mg_start2(&init, &error);
  if (listener->context_ == nullptr) {
    mg_exit_library();
    return absl::UnavailableError(absl::StrCat("cannot serve ", options.served, " on ",
                                               options.address_name, " (\"", options.address,
                                               "\"): ", error_text));
  }
  mg_server_port ports[1];
  std::memset(ports, 0, sizeof(ports));
  if (mg_get_server_ports(listener->context_, 1, ports) < 1 || ports[0].port <= 0) {
    // The destructor stops the context.
    return absl::UnavailableError(absl::StrCat("civetweb bound ", options.address_name, " (\"",
                                               options.address, "\") but reports no port"));
  }
  listener->port_ = ports[0].port;
  for (const Route& route : options.routes) {
    mg_set_request_handler(listener->context_, route.pattern.c_str(), route.handler, route.data);
  }
  return listener;
}

HttpListener::~HttpListener() {
  if (context_ == nullptr) return;
  mg_stop(context_);
  mg_exit_library();
}

}  // namespace paratune
