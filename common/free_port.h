// A TCP port chosen by the kernel, for programs that cannot bind port 0 and report the port
// they got: a probe's rendezvous (torchrun's --master-port), and in tests Prometheus,
// slurmctld and slurmd.
#ifndef PARATUNE_COMMON_FREE_PORT_H_
#define PARATUNE_COMMON_FREE_PORT_H_

#include "absl/status/statusor.h"

namespace paratune {

// A TCP port that was free on every local address a moment ago: the kernel's pick for a
// socket bound to port 0, closed before returning, so another process may take it before the
// launch binds it (rare: the kernel hands out ephemeral ports in turn). INTERNAL naming the
// system call when one fails.
absl::StatusOr<int> PickFreeTcpPort();

}  // namespace paratune

#endif  // PARATUNE_COMMON_FREE_PORT_H_
