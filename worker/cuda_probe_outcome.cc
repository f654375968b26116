#include "worker/cuda_probe_outcome.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "proto/probe_report.pb.h"
#include "worker/probe/probe_exit_codes.h"
#include "worker/probe/probe_report.h"

namespace paratune {
namespace {

// Characters of stderr kept in a message: the last lines, where CUDA and NCCL errors are.
constexpr size_t kStderrInMessage = 2000;

std::string StderrTail(const SubprocessResult& process) {
  absl::string_view tail = absl::StripTrailingAsciiWhitespace(process.stderr_tail);
  if (tail.size() > kStderrInMessage) tail = tail.substr(tail.size() - kStderrInMessage);
  if (tail.empty()) return "; stderr was empty";
  return absl::StrCat("; stderr ends: ", tail);
}

ProbeRun Failed(v1::ProbeOutcome outcome, std::string detail) {
  ProbeRun run;
  run.outcome = outcome;
  run.detail = std::move(detail);
  return run;
}

}  // namespace

std::string DescribeStoppedProbe(const SubprocessResult& process) {
  return absl::StrCat("paratune-probe was stopped after ", absl::FormatDuration(process.wall_time),
                      StderrTail(process));
}

ProbeRun RunFromProbeProcess(const ProbeSpec& spec, const SubprocessResult& process,
                             const std::optional<std::string>& report_file) {
  const std::string ending =
      absl::StrCat("paratune-probe ", DescribeEnding(process, absl::InfiniteDuration()));
  switch (process.ending) {
    case SubprocessResult::Ending::kTimedOut:
    case SubprocessResult::Ending::kCancelled:
      // The cuda backend sets no timeout and reports a probe it stopped as CANCELLED itself;
      // a probe stopped otherwise did not fail, and another worker may run it.
      return Failed(v1::PROBE_INFRA_ERROR, ending);
    case SubprocessResult::Ending::kSignaled:
      return Failed(v1::PROBE_CRASH, ending + StderrTail(process));
    case SubprocessResult::Ending::kExited:
      break;
  }
  if (process.exit_code == kProbeExitUsage) {
    // The backend validated the assignment with the probe's own rules, so a rejection means
    // the worker and the probe binary disagree (different builds).
    return Failed(v1::PROBE_CRASH,
                  absl::StrCat(ending,
                               ": it rejected an assignment the worker accepted; are the "
                               "worker and paratune-probe from the same build?",
                               StderrTail(process)));
  }
  if (process.exit_code != kProbeExitResultWritten) {
    return Failed(v1::PROBE_CRASH, ending + StderrTail(process));
  }
  v1::ProbeReport report;
  if (!report_file.has_value() || !report.ParseFromString(*report_file) ||
      report.outcome() == v1::PROBE_OUTCOME_UNSPECIFIED) {
    return Failed(v1::PROBE_CRASH,
                  absl::StrCat(ending, " without a readable report",
                               report_file.has_value() ? " (the result file is not a ProbeReport)"
                                                       : " (no result file)",
                               StderrTail(process)));
  }
  return RunFromReport(spec, report);
}

}  // namespace paratune
