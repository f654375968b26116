#include "tests/http_client.h"

#include <civetweb.h>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace paratune {

absl::StatusOr<HttpResponse> HttpRequest(int port, const std::string& method,
                                         const std::string& path_and_query,
                                         const std::string& json_body) {
  char error[256] = {};
  const std::string body_headers =
      json_body.empty()
          ? ""
          : absl::StrCat("Content-Type: application/json\r\nContent-Length: ", json_body.size(),
                         "\r\n");
  mg_connection* connection =
      mg_download("127.0.0.1", port, 0, error, sizeof(error),
                  "%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n%s\r\n%s", method.c_str(),
                  path_and_query.c_str(), absl::StrCat("127.0.0.1:", port).c_str(),
                  body_headers.c_str(), json_body.c_str());
  if (connection == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("HTTP ", method, " 127.0.0.1:", port, path_and_query, ": ", error));
  }
  HttpResponse response;
  const mg_response_info* info = mg_get_response_info(connection);
  response.status_code = info->status_code;
  for (int i = 0; i < info->num_headers; ++i) {
    response.headers[info->http_headers[i].name] = info->http_headers[i].value;
  }
  char buffer[8192];
  int read = 0;
  while ((read = mg_read(connection, buffer, sizeof(buffer))) > 0) {
    response.body.append(buffer, read);
  }
  mg_close_connection(connection);
  return response;
}

std::string UrlEncode(const std::string& text) {
  std::string encoded;
  for (unsigned char c : text) {
    if (absl::ascii_isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      encoded.push_back(static_cast<char>(c));
    } else {
      absl::StrAppendFormat(&encoded, "%%%02X", c);
    }
  }
  return encoded;
}

}  // namespace paratune
