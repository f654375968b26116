#include "worker/probe_backend.h"

#include "absl/strings/str_cat.h"

namespace paratune {

void ProbeContext::Stop() {
  absl::MutexLock lock(&mu_);
  if (!stop_.HasBeenNotified()) stop_.Notify();
}

absl::Status WaitUnlessStopped(const ProbeContext& context, absl::Duration duration,
                               const ProbeSpec& spec) {
  if (context.stop().WaitForNotificationWithTimeout(duration)) {
    return absl::CancelledError(absl::StrCat("probe ", spec.name(), " was stopped"));
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
