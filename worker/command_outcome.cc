#include "worker/command_outcome.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace paratune {
namespace {

constexpr int kTailLines = 12;
constexpr size_t kTailBytes = 2048;

// The last kTailLines lines of `output`, at most kTailBytes of them.
std::string LastLines(const std::string& output) {
  std::vector<absl::string_view> lines = absl::StrSplit(output, '\n', absl::SkipEmpty());
  if (lines.size() > kTailLines) lines.erase(lines.begin(), lines.end() - kTailLines);
  std::string tail = absl::StrJoin(lines, "\n");
  if (tail.size() > kTailBytes) tail = "..." + tail.substr(tail.size() - kTailBytes);
  return tail;
}

// "\nstderr:\n...\nstdout:\n..." for the streams that said something.
std::string OutputTail(const SubprocessResult& run) {
  std::string tail;
  const std::string err = LastLines(run.stderr_tail);
  const std::string out = LastLines(run.stdout_tail);
  if (!err.empty()) absl::StrAppend(&tail, "\nlast lines of stderr:\n", err);
  if (!out.empty()) absl::StrAppend(&tail, "\nlast lines of stdout:\n", out);
  if (tail.empty()) tail = " (it printed nothing)";
  return tail;
}

// "after logging 2 of 5 step times".
std::string Progress(const TrainingLog& log, const ExpectedSteps& expected) {
  return absl::StrCat("after logging ", log.step_times_seconds().size(), " of ",
                      expected.dropped_iterations + expected.timed_steps, " step times");
}

CommandOutcome Failure(v1::ProbeOutcome outcome, std::string message) {
  CommandOutcome result;
  result.outcome = outcome;
  result.message = std::move(message);
  return result;
}

}  // namespace

CommandOutcome ClassifyCommandRun(const SubprocessResult& run, const TrainingLog& log,
                                  const ExpectedSteps& expected, absl::Duration timeout) {
  const std::vector<double>& logged = log.step_times_seconds();
  const int64_t needed = expected.dropped_iterations + expected.timed_steps;
  const int64_t count = static_cast<int64_t>(logged.size());
  const bool exited_ok = run.ending == SubprocessResult::Ending::kExited && run.exit_code == 0;
  const std::string ending =
      absl::StrCat(run.ending == SubprocessResult::Ending::kSignaled ? "the run was " : "the run ",
                   DescribeEnding(run, timeout));
  const std::string progress = Progress(log, expected);
  const std::string step_source = log.patterns().DescribeStepSource();

  if (exited_ok && !log.unreadable_step_line().empty()) {
    return Failure(v1::PROBE_CRASH,
                   absl::StrCat(ending, " but a step line could not be read: ",
                                log.unreadable_step_line(), "; ", progress, OutputTail(run)));
  }

  if (exited_ok && count == 0 && expected.untimed_allowed) {
    CommandOutcome result;
    result.outcome = v1::PROBE_OK;
    result.message =
        "ran its ranks to the end without logging step times (another node of "
        "the gang times the steps)";
    return result;
  }
  if (exited_ok && count == needed) {
    const auto first = logged.begin() + expected.dropped_iterations;
    const auto bad = std::find_if(first, logged.end(), [](double t) { return !(t > 0); });
    if (bad == logged.end()) {
      CommandOutcome result;
      result.outcome = v1::PROBE_OK;
      result.timed_step_times.assign(first, logged.end());
      return result;
    }
    return Failure(v1::PROBE_CRASH,
                   absl::StrCat("iteration ", bad - logged.begin() + 1, " logged a step time of ",
                                *bad, " s, which no run takes (", step_source, ")"));
  }
  if (!log.out_of_memory_line().empty()) {
    return Failure(
        v1::PROBE_OUT_OF_MEMORY,
        absl::StrCat("out of memory: \"", log.out_of_memory_line(), "\"; ", ending, " ", progress));
  }
  if (!log.nccl_error_line().empty()) {
    return Failure(v1::PROBE_CRASH, absl::StrCat("NCCL error: \"", log.nccl_error_line(), "\"; ",
                                                 ending, " ", progress, OutputTail(run)));
  }
  if (run.ending == SubprocessResult::Ending::kTimedOut) {
    return Failure(v1::PROBE_TIMEOUT,
                   absl::StrCat(ending, " and was stopped, ", progress, OutputTail(run)));
  }
  if (!exited_ok) {
    return Failure(v1::PROBE_CRASH, absl::StrCat(ending, " ", progress, OutputTail(run)));
  }
  if (count > needed) {
    return Failure(v1::PROBE_CRASH,
                   absl::StrCat(ending, " having logged ", count, " step times for ", needed,
                                " iterations: the ", step_source,
                                " matches more than one line per iteration", OutputTail(run)));
  }
  return Failure(v1::PROBE_CRASH,
                 absl::StrCat(ending, " but logged only ", count, " of the ", needed,
                              " step times it should (", step_source, ")", OutputTail(run)));
}

std::string DescribeStoppedRun(const SubprocessResult& run, const TrainingLog& log,
                               const ExpectedSteps& expected) {
  return absl::StrCat("the run was stopped, ", Progress(log, expected), OutputTail(run));
}

}  // namespace paratune
