// A TCP port on 127.0.0.1 that was free a moment ago, for programs that cannot bind port 0
// and report the port they got (Prometheus, slurmctld, slurmd).
#ifndef PARATUNE_TESTS_FREE_PORT_H_
#define PARATUNE_TESTS_FREE_PORT_H_

#include "absl/status/statusor.h"

namespace paratune {

// Binds port 0, reads the port the kernel chose and closes the socket. Another process may
// take the port before the caller's program binds it; that window is milliseconds, and the
// kernel hands out ephemeral ports in turn, so tests accept it. UNAVAILABLE on socket errors.
absl::StatusOr<int> PickFreePort();

}  // namespace paratune

#endif  // PARATUNE_TESTS_FREE_PORT_H_
