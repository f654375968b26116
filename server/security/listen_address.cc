#include "server/security/listen_address.h"

#include <arpa/inet.h>

#include <cstdint>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace paratune {

bool IsLoopbackHost(absl::string_view host) {
  if (absl::AsciiStrToLower(host) == "localhost" || host == "[::1]") return true;
  in_addr ipv4{};
  const std::string host_string(host);
  return inet_pton(AF_INET, host_string.c_str(), &ipv4) == 1 && (ntohl(ipv4.s_addr) >> 24) == 127;
}

absl::Status CheckListenAddress(absl::string_view field, absl::string_view address,
                                bool remote_allowed) {
  const size_t colon = address.rfind(':');
  uint32_t port = 0;
  if (colon == absl::string_view::npos || colon == 0 ||
      !absl::SimpleAtoi(address.substr(colon + 1), &port) || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " (\"", address,
                     "\") must be host:port with a port in [0, 65535], e.g. "
                     "127.0.0.1:50051"));
  }
  const absl::string_view host = address.substr(0, colon);
  if (!remote_allowed && !IsLoopbackHost(host)) {
    return absl::FailedPreconditionError(absl::StrCat(
        field, " (\"", address,
        "\") is not a loopback address; beyond loopback the server needs TLS and bearer "
        "tokens (--tls_cert, --tls_key, --token_file), or --insecure_allow_remote to listen "
        "without them"));
  }
  return absl::OkStatus();
}

std::string DialAddress(absl::string_view address, int port, absl::string_view hostname) {
  absl::string_view host = address.substr(0, address.rfind(':'));
  if (host == "0.0.0.0" || host == "[::]") host = hostname;
  return absl::StrCat(host, ":", port);
}

}  // namespace paratune
