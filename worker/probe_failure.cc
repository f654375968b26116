#include "worker/probe_failure.h"

#include "absl/strings/str_cat.h"

namespace paratune {

v1::ProbeResult ResultFromBackendError(const std::string& backend, const absl::Status& error) {
  v1::ProbeResult result;
  result.set_backend(backend);
  switch (error.code()) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kResourceExhausted:
    case absl::StatusCode::kAborted:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kCancelled:
      result.set_outcome(v1::PROBE_INFRA_ERROR);
      break;
    default:
      result.set_outcome(v1::PROBE_CRASH);
      break;
  }
  result.set_message(absl::StrCat("backend ", backend, " failed: ", error.ToString()));
  return result;
}

v1::ProbeResult ResultAtDeadline(const std::string& backend, double deadline_seconds,
                                 absl::Duration grace, const absl::Status& stopped) {
  v1::ProbeResult result;
  result.set_outcome(v1::PROBE_TIMEOUT);
  result.set_backend(backend);
  result.set_message(absl::StrCat(
      "the probe did not finish within its deadline of ", deadline_seconds, " s and was stopped",
      grace > absl::ZeroDuration() ? absl::StrCat(" ", absl::FormatDuration(grace), " before it")
                                   : "",
      stopped.ok() ? "" : absl::StrCat(": ", stopped.message())));
  return result;
}

v1::ProbeResult ResultRefusedByServer(const std::string& backend, const absl::Status& refusal,
                                      double wall_seconds) {
  v1::ProbeResult result;
  result.set_outcome(v1::PROBE_CRASH);
  result.set_backend(backend);
  result.set_message(absl::StrCat("the server refused the result: ", refusal.message()));
  result.set_wall_seconds(wall_seconds);
  return result;
}

}  // namespace paratune
