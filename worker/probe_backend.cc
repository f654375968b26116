#include "worker/probe_backend.h"

#include "absl/strings/str_cat.h"

namespace paratune {

absl::Status WaitUnlessCancelled(const ProbeContext& context, absl::Duration duration,
                                 const std::string& probe) {
  if (context.cancelled().WaitForNotificationWithTimeout(duration)) {
    return absl::CancelledError(absl::StrCat("probe ", probe, " was cancelled"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> SoloProbeContext::Rendezvous(const std::string& token) {
  if (token.empty()) {
    return absl::FailedPreconditionError(
        "rendezvous without a token outside a gang: no other worker will send one");
  }
  return token;
}

}  // namespace paratune
