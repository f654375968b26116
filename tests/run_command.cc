#include "tests/run_command.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/notification.h"
#include "common/test_file.h"

namespace paratune {

bool CommandResult::succeeded() const {
  return run.ending == SubprocessResult::Ending::kExited && run.exit_code == 0;
}

absl::StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv,
                                         const CommandOptions& options) {
  static std::atomic<int> runs{0};
  SubprocessOptions subprocess;
  subprocess.argv = argv;
  subprocess.env = options.environment;
  subprocess.timeout = options.timeout;
  // The output is gathered line by line below, in order across both streams.
  subprocess.max_output_bytes = 0;
  subprocess.stdin_path =
      WriteTestFile(absl::StrCat("run_command_stdin.", getpid(), ".", ++runs), options.stdin_text);
  CommandResult result;
  subprocess.on_line = [&result](OutputStream, absl::string_view line) {
    absl::StrAppend(&result.output, line, "\n");
  };
  const absl::Notification never;
  absl::StatusOr<SubprocessResult> ran = RunSubprocess(subprocess, never);
  std::remove(subprocess.stdin_path.c_str());
  if (!ran.ok()) return ran.status();
  result.run = *std::move(ran);
  if (result.run.ending == SubprocessResult::Ending::kTimedOut) {
    return absl::DeadlineExceededError(
        absl::StrCat(argv.empty() ? "" : argv[0], " did not finish within ",
                     absl::FormatDuration(options.timeout), "; its output: ", result.output));
  }
  return result;
}

absl::StatusOr<std::string> FindProgram(const std::string& name, const std::string& package) {
  const char* path = std::getenv("PATH");
  // Bazel's test environment has a short PATH; the Debian packages install into these.
  const std::string search = absl::StrCat(path != nullptr ? path : "", ":/usr/sbin:/usr/bin:/sbin");
  for (absl::string_view dir : absl::StrSplit(search, ':', absl::SkipEmpty())) {
    const std::string candidate = absl::StrCat(dir, "/", name);
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return absl::NotFoundError(
      absl::StrCat(name, " is not installed (Debian package ", package, "); run scripts/setup.sh"));
}

}  // namespace paratune
