// A minimal HTTP/1.1 client for tests (civetweb's client): GET a URL path from a server on
// loopback, e.g. a binary's /metrics or Prometheus' query API.
#ifndef PARATUNE_TESTS_HTTP_CLIENT_H_
#define PARATUNE_TESTS_HTTP_CLIENT_H_

#include <map>
#include <string>

#include "absl/status/statusor.h"

namespace paratune {

struct HttpResponse {
  int status_code = 0;
  // Header names as the server sent them.
  std::map<std::string, std::string> headers;
  std::string body;
};

// Sends `method` `path_and_query` to 127.0.0.1:`port`, with `json_body` as an
// application/json body when not empty, and reads the whole response. UNAVAILABLE with
// civetweb's reason when the server cannot be reached.
absl::StatusOr<HttpResponse> HttpRequest(int port, const std::string& method,
                                         const std::string& path_and_query,
                                         const std::string& json_body = "");

inline absl::StatusOr<HttpResponse> HttpGet(int port, const std::string& path_and_query) {
  return HttpRequest(port, "GET", path_and_query);
}

// Percent-encodes `text` for a URL query value (RFC 3986 unreserved characters stay).
std::string UrlEncode(const std::string& text);

}  // namespace paratune

#endif  // PARATUNE_TESTS_HTTP_CLIENT_H_
