#include "server/console/console_server.h"

#include <civetweb.h>

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "common/status_macros.h"
#include "server/console/console_assets.h"
#include "server/security/listen_address.h"

namespace paratune {
namespace {

constexpr absl::string_view kAssetDirectory = "server/console/assets/";

// Every response: the pages may load and fetch from this server only (no page loads
// anything from elsewhere, and an injected one could not either), and may not be framed.
constexpr char kSecurityHeaders[] =
    "Content-Security-Policy: default-src 'none'; script-src 'self'; style-src 'self'; "
    "connect-src 'self'; img-src 'self'; frame-ancestors 'none'; base-uri 'none'; "
    "form-action 'none'\r\n"
    "X-Content-Type-Options: nosniff\r\nReferrer-Policy: no-referrer\r\n"
    "Cache-Control: no-store\r\n";

void Reply(mg_connection* connection, int status, absl::string_view content_type,
           absl::string_view body) {
  mg_printf(connection, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s\r\n",
            status, mg_get_response_code_text(connection, status),
            std::string(content_type).c_str(), body.size(), kSecurityHeaders);
  if (std::strcmp(mg_get_request_info(connection)->request_method, "HEAD") != 0) {
    mg_write(connection, body.data(), body.size());
  }
}

absl::string_view ContentTypeOf(absl::string_view path) {
  if (absl::EndsWith(path, ".js")) return "text/javascript; charset=utf-8";
  if (absl::EndsWith(path, ".css")) return "text/css; charset=utf-8";
  if (absl::EndsWith(path, ".svg")) return "image/svg+xml";
  return "text/html; charset=utf-8";
}

// The host of a Host header: "127.0.0.1" of "127.0.0.1:8080", "[::1]" of "[::1]:8080".
absl::string_view HostOf(absl::string_view host_header) {
  if (absl::StartsWith(host_header, "[")) {
    return host_header.substr(0, host_header.find(']') + 1);
  }
  return host_header.substr(0, host_header.find(':'));
}

// A server on loopback answers only requests that name a loopback host, so that a web page
// elsewhere cannot read it through a DNS name rebound to 127.0.0.1.
bool HostAllowed(mg_connection* connection, bool loopback) {
  if (!loopback) return true;
  const char* host = mg_get_header(connection, "Host");
  return host != nullptr && IsLoopbackHost(HostOf(host));
}

std::string UrlDecode(absl::string_view text) {
  std::string decoded(text.size() + 1, '\0');
  const int length = mg_url_decode(text.data(), static_cast<int>(text.size()), decoded.data(),
                                   static_cast<int>(decoded.size()), /*is_form_url_encoded=*/1);
  decoded.resize(length < 0 ? 0 : length);
  return decoded;
}

ConsoleApiRequest ParseRequest(mg_connection* connection, int64_t max_body_bytes) {
  const mg_request_info* info = mg_get_request_info(connection);
  ConsoleApiRequest request;
  request.method = info->request_method;
  request.path = info->local_uri != nullptr ? info->local_uri : "";
  if (info->query_string != nullptr) {
    for (absl::string_view pair : absl::StrSplit(info->query_string, '&', absl::SkipEmpty())) {
      const std::pair<absl::string_view, absl::string_view> key_value =
          absl::StrSplit(pair, absl::MaxSplits('=', 1));
      request.query[UrlDecode(key_value.first)] = UrlDecode(key_value.second);
    }
  }
  for (int i = 0; i < info->num_headers; ++i) {
    if (absl::EqualsIgnoreCase(info->http_headers[i].name, "Authorization")) {
      request.authorization.push_back(info->http_headers[i].value);
    }
  }
  // One byte past the cap is enough for the API to refuse the body as too large.
  char buffer[8192];
  int read = 0;
  while (static_cast<int64_t>(request.body.size()) <= max_body_bytes &&
         (read = mg_read(connection, buffer, sizeof(buffer))) > 0) {
    request.body.append(buffer, read);
  }
  return request;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ConsoleServer>> ConsoleServer::Start(Options options) {
  const bool tokens = options.api.tokens != nullptr;
  PT_RETURN_IF_ERROR(CheckListenAddress("console_address", options.address,
                                        /*remote_allowed=*/true));
  const absl::string_view host = options.address.substr(0, options.address.rfind(':'));
  const bool loopback = IsLoopbackHost(host);
  if (!loopback && tokens) {
    return absl::FailedPreconditionError(absl::StrCat(
        "console_address (\"", options.address,
        "\") is not a loopback address: the console speaks plain HTTP (this civetweb has no "
        "TLS), and with --token_file its bearer tokens would cross the network in plaintext; "
        "listen on 127.0.0.1 and reach it through an SSH tunnel (docs/console.md)"));
  }
  if (!loopback && !options.allow_remote) {
    return absl::FailedPreconditionError(absl::StrCat(
        "console_address (\"", options.address,
        "\") is not a loopback address; without --token_file anyone who reaches it reads every "
        "search: pass --insecure_allow_remote to listen there anyway"));
  }
  if (options.api.reader == nullptr) {
    return absl::InvalidArgumentError("api.reader (null) must be set");
  }
  std::unique_ptr<ConsoleServer> server(new ConsoleServer(std::move(options.api), loopback));
  HttpListener::Options listener;
  listener.address = options.address;
  listener.address_name = "console_address";
  listener.served = "the console";
  listener.threads = options.threads;
  listener.routes = {{"/api", &ConsoleServer::HandleApi, server.get()},
                     {"/", &ConsoleServer::HandleAsset, server.get()}};
  PT_ASSIGN_OR_RETURN(server->listener_, HttpListener::Start(listener));
  return server;
}

int ConsoleServer::HandleApi(mg_connection* connection, void* server) {
  const auto* self = static_cast<const ConsoleServer*>(server);
  if (!HostAllowed(connection, self->loopback_)) {
    Reply(connection, 403, "text/plain", "the console answers requests for a loopback host only\n");
    return 403;
  }
  const ConsoleApiReply reply =
      self->api_.Handle(ParseRequest(connection, self->api_.max_request_bytes()));
  Reply(connection, reply.http_status, "application/json", reply.json);
  return reply.http_status;
}

int ConsoleServer::HandleAsset(mg_connection* connection, void* server) {
  const auto* self = static_cast<const ConsoleServer*>(server);
  if (!HostAllowed(connection, self->loopback_)) {
    Reply(connection, 403, "text/plain", "the console answers requests for a loopback host only\n");
    return 403;
  }
  const mg_request_info* info = mg_get_request_info(connection);
  const absl::string_view method = info->request_method;
  if (method != "GET" && method != "HEAD") {
    Reply(connection, 405, "text/plain", "the console's pages answer GET and HEAD only\n");
    return 405;
  }
  // Every page is index.html; its script draws the page that the fragment (#/search/3) names.
  absl::string_view path = info->local_uri;
  if (path == "/") path = "/index.html";
  for (const EmbeddedFile& file : ConsoleAssetFiles()) {
    const absl::string_view name = absl::string_view(file.path).substr(kAssetDirectory.size());
    if (path.substr(1) == name) {
      Reply(connection, 200, ContentTypeOf(name), file.text);
      return 200;
    }
  }
  Reply(connection, 404, "text/plain", absl::StrCat("no page at ", path, "\n"));
  return 404;
}

}  // namespace paratune
