// Which addresses the server may listen on. Without TLS and bearer tokens
// (server/security/server_security.h) it listens on loopback only, unless remote access is
// explicitly allowed (DESIGN.md §11).
#ifndef PARATUNE_SERVER_SECURITY_LISTEN_ADDRESS_H_
#define PARATUNE_SERVER_SECURITY_LISTEN_ADDRESS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace paratune {

// Whether `host` is localhost, in 127.0.0.0/8 or [::1].
bool IsLoopbackHost(absl::string_view host);

// OK for host:port with port in [0, 65535] (0 picks a free port) and a loopback host
// (localhost, 127.0.0.0/8, [::1]) or any host when remote_allowed (the server has TLS and
// tokens, or was started with --insecure_allow_remote). INVALID_ARGUMENT naming `field` and
// the value for a malformed address; FAILED_PRECONDITION for a non-loopback host without
// remote_allowed.
absl::Status CheckListenAddress(absl::string_view field, absl::string_view address,
                                bool remote_allowed);

// The host:port at which clients reach a server that listens on `address` (checked by
// CheckListenAddress) and bound `port`: the listening host, or `hostname` when the server
// listens on every interface (0.0.0.0, [::]).
std::string DialAddress(absl::string_view address, int port, absl::string_view hostname);

}  // namespace paratune

#endif  // PARATUNE_SERVER_SECURITY_LISTEN_ADDRESS_H_
