// A TCP port for a probe's rendezvous (torchrun's --master-port), chosen by the kernel.
#ifndef PARATUNE_WORKER_FREE_PORT_H_
#define PARATUNE_WORKER_FREE_PORT_H_

#include "absl/status/statusor.h"

namespace paratune {

// A TCP port that was free on every local address a moment ago: the kernel's pick for a
// socket bound to port 0, closed before returning, so another process may take it before the
// launch binds it (rare: the kernel hands out ephemeral ports in turn). INTERNAL naming the
// system call when one fails.
absl::StatusOr<int> PickFreeTcpPort();

}  // namespace paratune

#endif  // PARATUNE_WORKER_FREE_PORT_H_
