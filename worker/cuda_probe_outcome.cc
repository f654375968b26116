#include "worker/cuda_probe_outcome.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "worker/probe/probe_exit_codes.h"

namespace paratune {
namespace {

constexpr char kBackend[] = "cuda";
// Characters of stderr kept in a message: the last lines, where CUDA and NCCL errors are.
constexpr size_t kStderrInMessage = 2000;

std::string StderrTail(const SubprocessResult& run) {
  absl::string_view tail = absl::StripTrailingAsciiWhitespace(run.stderr_tail);
  if (tail.size() > kStderrInMessage) tail = tail.substr(tail.size() - kStderrInMessage);
  if (tail.empty()) return "; stderr was empty";
  return absl::StrCat("; stderr ends: ", tail);
}

v1::ProbeResult Failed(v1::ProbeOutcome outcome, const std::string& message) {
  v1::ProbeResult result;
  result.set_outcome(outcome);
  result.set_backend(kBackend);
  result.set_message(message);
  return result;
}

v1::ProbeResult FromRun(const SubprocessResult& run, absl::Duration timeout,
                        const std::optional<std::string>& result_file) {
  const std::string ending = absl::StrCat("paratune-probe ", DescribeEnding(run, timeout));
  switch (run.ending) {
    case SubprocessResult::Ending::kTimedOut:
      return Failed(v1::PROBE_TIMEOUT, ending + StderrTail(run));
    case SubprocessResult::Ending::kCancelled:
      // The backend returns CANCELLED for these before asking; another worker may run it.
      return Failed(v1::PROBE_INFRA_ERROR, ending);
    case SubprocessResult::Ending::kSignaled:
      return Failed(v1::PROBE_CRASH, ending + StderrTail(run));
    case SubprocessResult::Ending::kExited:
      break;
  }
  if (run.exit_code == kProbeExitUsage) {
    // The backend validated the assignment with the probe's own rules, so a rejection means
    // the worker and the probe binary disagree (different builds).
    return Failed(v1::PROBE_CRASH,
                  absl::StrCat(ending,
                               ": it rejected an assignment the worker accepted; are the "
                               "worker and paratune-probe from the same build?",
                               StderrTail(run)));
  }
  if (run.exit_code != kProbeExitResultWritten) {
    return Failed(v1::PROBE_CRASH, ending + StderrTail(run));
  }
  v1::ProbeResult result;
  if (!result_file.has_value() || !result.ParseFromString(*result_file) ||
      result.outcome() == v1::PROBE_OUTCOME_UNSPECIFIED) {
    return Failed(v1::PROBE_CRASH,
                  absl::StrCat(ending, " without a readable result",
                               result_file.has_value() ? " (the result file is not a ProbeResult)"
                                                       : " (no result file)",
                               StderrTail(run)));
  }
  result.set_backend(kBackend);
  return result;
}

}  // namespace

v1::ProbeResult ResultFromProbeRun(const SubprocessResult& run, absl::Duration timeout,
                                   const std::optional<std::string>& result_file) {
  v1::ProbeResult result = FromRun(run, timeout, result_file);
  result.set_wall_seconds(absl::ToDoubleSeconds(run.wall_time));
  return result;
}

}  // namespace paratune
