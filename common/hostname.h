// This machine's hostname, as gethostname(2) reports it: what a worker registers under and
// what Slurm jobs' workers dial the server at, unless told otherwise.
#ifndef PARATUNE_COMMON_HOSTNAME_H_
#define PARATUNE_COMMON_HOSTNAME_H_

#include <string>

#include "absl/status/statusor.h"

namespace paratune {

// UNAVAILABLE with strerror when the system call fails or returns an empty name.
absl::StatusOr<std::string> LocalHostname();

}  // namespace paratune

#endif  // PARATUNE_COMMON_HOSTNAME_H_
