#include "worker/probe_backend.h"

namespace paratune {

absl::StatusOr<std::string> SoloProbeContext::Rendezvous(const std::string& token) {
  if (token.empty()) {
    return absl::FailedPreconditionError(
        "rendezvous without a token outside a gang: no other worker will send one");
  }
  return token;
}

}  // namespace paratune
